"""What the server and the trainer share: wire schemas, the client, the Redis queue.

Installed as ``botgrpo.services`` (pyproject's package-dir); the folder is never a top-level package.
"""
if __name__ != "botgrpo.services":  # one module, one name
    raise ImportError(f"import botgrpo.services, not {__name__}: the services/ folder installs as botgrpo.services")
