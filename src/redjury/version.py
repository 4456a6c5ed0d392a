"""redjury's version (`redjury.__version__`), in a module of its own so that any layer may
read it without importing the package's public face."""

__version__ = "0.1.0"
