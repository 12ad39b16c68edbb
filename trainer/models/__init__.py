"""Models: building and loading them (tiny, pretrained, SFT warm starts, LoRA), precision, and
their forward for per-token log-probs (padded and packed)."""
