"""Moved to :mod:`trainer.tiny` (the trainer does not import the CLI package); kept for old imports."""
from trainer.tiny import SPECIALS, save_token_classifier, train_tokenizer  # noqa: F401
