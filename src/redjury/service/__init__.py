"""`redjury serve`: the detectors and judge panel as an HTTP judge service (aiohttp).

Imported only by `redjury serve` and by code that asks for it: `import redjury` skips it.
"""
