"""The token-reward server: scorers, the span mapper, the FastAPI app.

Installed as ``botgrpo.reward_server`` (pyproject's package-dir); the folder is never a top-level package.
"""
if __name__ != "botgrpo.reward_server":  # one module, one name
    raise ImportError(f"import botgrpo.reward_server, not {__name__}: the reward_server/ folder installs as botgrpo.reward_server")
