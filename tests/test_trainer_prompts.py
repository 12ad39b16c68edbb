"""Chat templates for conversational datasets (TRL's ``messages`` format) and the end tokens of
the generation config, on CPU with the tiny policy."""
import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from botgrpo.trainer.rollout.base import SamplingParams
from botgrpo.trainer.rollout.hf import HFEngine
from botgrpo.trainer.run.loop import Trainer
from tests.test_trainer import _Scripted
from tests.tiny_setup import tiny_config, tiny_math_setup

TEMPLATE = ("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}[assistant] {% endif %}")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chat")
    paths = tiny_math_setup(tmp)
    tok = AutoTokenizer.from_pretrained(paths["model"])
    tok.chat_template = TEMPLATE
    tok.save_pretrained(paths["model"])
    rows = [json.loads(x) for x in open(paths["dataset"]).read().splitlines()]
    with open(tmp / "chat.jsonl", "w") as f:
        for i, r in enumerate(rows[:16]):
            conversation = [{"role": "system", "content": "Answer with a number."},
                            {"role": "user", "content": r["prompt"].strip()},
                            {"role": "assistant", "content": "(the reference solution, dropped)"}]
            row = {"messages": conversation} if i % 2 else {"prompt": conversation[:2]}
            f.write(json.dumps({**row, "reference": r["reference"]}) + "\n")
    return {**paths, "chat": str(tmp / "chat.jsonl")}


def paths(setup, **changes):
    return {**{k: setup[k] for k in ("model", "dataset", "eval_dataset")}, **changes}


def templated(tok, messages):
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tok(text, add_special_tokens=False)["input_ids"]


def test_conversational_prompts_get_the_chat_template_and_train(setup, tmp_path):
    cfg = tiny_config(paths(setup, dataset=setup["chat"]), tmp_path / "run", steps=1, eval={"dataset": None}, log={"plot": False})
    trainer = Trainer(cfg, reward_source=_Scripted())
    try:
        example = trainer.examples[1]  # from a `messages` row: the assistant's reference turn is not in the prompt
        assert [m["role"] for m in example.prompt] == ["system", "user"]
        batch = trainer.engine.generate([e.prompt for e in trainer.examples[:2]], 2, SamplingParams(max_new_tokens=4),
                                        seeds=[0, 1])
        tok = trainer.tokenizer
        assert batch.prompt_ids == [templated(tok, trainer.examples[0].prompt), templated(tok, example.prompt)]
        assert tok.decode(batch.prompt_ids[0]).endswith("[assistant] ")
        [record] = trainer.train()
    finally:
        trainer.close()
    assert record["step"] == 1


def test_apply_chat_template_turns_text_prompts_into_a_user_message(setup, tmp_path):
    cfg = tiny_config(paths(setup), tmp_path / "run", data={"apply_chat_template": True}, eval={"dataset": None}, log={"plot": False})
    trainer = Trainer(cfg, reward_source=_Scripted())
    try:
        text = trainer.examples[0].prompt
        batch = trainer.engine.generate([text], 1, SamplingParams(max_new_tokens=2), seeds=[0])
        assert batch.prompt_ids == [templated(trainer.tokenizer, [{"role": "user", "content": text}])]
    finally:
        trainer.close()


def test_conversations_are_refused_when_the_template_is_off(setup, tmp_path):
    cfg = tiny_config(paths(setup, dataset=setup["chat"]), tmp_path / "run", data={"apply_chat_template": False})
    with pytest.raises(ValueError, match="conversation but apply_chat_template is false"):
        Trainer(cfg, reward_source=_Scripted())


def test_the_hf_engine_stops_at_every_end_token_of_the_generation_config(setup):
    tok = AutoTokenizer.from_pretrained(setup["model"])
    model = AutoModelForCausalLM.from_pretrained(setup["model"])
    sampling = SamplingParams(max_new_tokens=16)
    first = HFEngine(model, tok).generate(["Compute 1 + 2.\n"], 4, sampling, seeds=[3])
    row = int(first.lengths.argmax())
    ids = first.completion_ids[row, : first.lengths[row]].tolist()
    end = next(t for t in ids[1:] if t != tok.eos_token_id)  # a token sampled mid-completion
    model.generation_config.eos_token_id = [tok.eos_token_id, end]  # e.g. <|im_end|> beside <|endoftext|>
    again = HFEngine(model, tok).generate(["Compute 1 + 2.\n"], 4, sampling, seeds=[3])
    stop = ids.index(end) + 1
    assert again.completion_ids[row, :stop].tolist() == ids[:stop]
    assert int(again.lengths[row]) == stop and not bool(again.truncated[row])
    for i, n in enumerate(again.lengths.tolist()):  # no completion runs past an end token
        assert not any(t in (tok.eos_token_id, end) for t in again.completion_ids[i, : n - 1].tolist())
    assert torch.all(again.lengths <= first.lengths)
