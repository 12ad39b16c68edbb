"""A training run: the loop, the update (batch and group-streamed), the asynchronous pipeline,
checkpoints, distributed training, records and progress."""
