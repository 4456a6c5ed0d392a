"""Engines that run the pipeline's stages elsewhere than in this process (Ray)."""
