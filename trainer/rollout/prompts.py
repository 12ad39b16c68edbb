"""From a dataset's prompt to the policy's input ids, and where a completion ends: the same
for every engine.

A prompt is either text (fed verbatim) or a conversation, a list of ``{"role", "content"}``
messages (TRL's conversational format), rendered with the tokenizer's chat template and the
assistant's turn opened (``add_generation_prompt``). ``apply_chat_template`` chooses:

* ``None`` (default): conversations get the template, text goes verbatim;
* ``True``: text prompts become one user message and get the template too (an instruct model
  pointed at a plain-text dataset);
* ``False``: never; a conversational prompt is an error.

Completions end at any of the model's end tokens: the tokenizer's eos and every
``eos_token_id`` of the generation config (instruct models list several, e.g. ``<|im_end|>``
and ``<|endoftext|>``), which is what vLLM stops at by default. Both engines use
:func:`stop_token_ids`.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

Message = dict[str, Any]
Prompt = Union[str, list[Message]]


def is_conversational(prompt: Any) -> bool:
    return isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt)


def stop_token_ids(tokenizer, generation_config=None) -> list[int]:
    """The tokenizer's eos and the generation config's ``eos_token_id`` (an int or a list), deduplicated."""
    ids: list[int] = []
    for value in (getattr(tokenizer, "eos_token_id", None), getattr(generation_config, "eos_token_id", None)):
        for token in (value if isinstance(value, (list, tuple)) else [value]):
            if token is not None and int(token) not in ids:
                ids.append(int(token))
    if not ids:
        raise ValueError("neither the tokenizer nor the generation config names an end-of-sequence token")
    return ids


class PromptEncoder:
    """Renders prompts (text or conversations) and turns them into token ids."""

    def __init__(self, tokenizer, apply_chat_template: Optional[bool] = None):
        self.tokenizer, self.apply_chat_template = tokenizer, apply_chat_template
        if apply_chat_template and not getattr(tokenizer, "chat_template", None):
            raise ValueError("apply_chat_template is set but the tokenizer has no chat template")

    def check(self, prompts: Sequence[Prompt]) -> None:
        """Fail early (before any model loads) on prompts this encoder cannot render."""
        for i, prompt in enumerate(prompts):
            if is_conversational(prompt):
                if self.apply_chat_template is False:
                    raise ValueError(f"prompt {i} is a conversation but apply_chat_template is false")
                if not getattr(self.tokenizer, "chat_template", None):
                    raise ValueError(f"prompt {i} is a conversation but the tokenizer has no chat template")
            elif not isinstance(prompt, str):
                raise ValueError(f"prompt {i} is neither text nor a list of role/content messages")

    def render(self, prompt: Prompt) -> str:
        """The text the policy reads: the template applied where it applies."""
        if isinstance(prompt, str) and not self.apply_chat_template:
            return prompt
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        self.check([messages])
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def ids(self, prompt: Prompt) -> list[int]:
        text = self.render(prompt)
        templated = not (isinstance(prompt, str) and not self.apply_chat_template)
        # a rendered template already holds its special tokens (bos and the like)
        return list(self.tokenizer(text, add_special_tokens=not templated)["input_ids"])

    def __call__(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        return [self.ids(p) for p in prompts]
