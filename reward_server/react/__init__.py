"""React/TSX scoring: code extraction, token schemes over compiler diagnostics, the spec check."""
