"""The sandbox that runs untrusted code: Node pool, isolation layers, Chromium.

Installed as ``botgrpo.sandbox`` (pyproject's package-dir); the folder is never a top-level package.
"""
if __name__ != "botgrpo.sandbox":  # one module, one name
    raise ImportError(f"import botgrpo.sandbox, not {__name__}: the sandbox/ folder installs as botgrpo.sandbox")
