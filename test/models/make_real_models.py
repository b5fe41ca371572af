#!/usr/bin/python3
"""Exports models written the way widely used open-source modeling code
writes them (GPT-2, BERT and ViT in the style of Hugging Face's modeling
files), with batch and sequence both dynamic (ViT: batch), plus PyTorch's
outputs at three shapes each, for test/compiler/real-style-models.test.

Run with Debian's Python (apt-get install python3-torch python3-onnx):
    /usr/bin/python3 test/models/make_real_models.py test/models/real
It writes NAME.onnx and NAME.sK.input_J.npy / NAME.sK.output_0.npy for
each shape K. The outputs are committed, so tests do not need PyTorch.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
OPSET = 17


# --- GPT-2: Conv1D as addmm on a flattened view, a uint8 causal-mask
# buffer sliced by the run-time length, tanh GELU written out, heads split
# and merged with view/permute on x.size().

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.randn(nf) * 0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, embed, heads, max_pos):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(
            (max_pos, max_pos), dtype=torch.uint8)).view(1, 1, max_pos, max_pos))
        self.register_buffer("masked_bias", torch.tensor(-1e4))
        self.num_heads = heads
        self.head_dim = embed // heads
        self.split_size = embed
        self.c_attn = Conv1D(3 * embed, embed)
        self.c_proj = Conv1D(embed, embed)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (self.num_heads * self.head_dim,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, attention_mask):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query)
        key = self._split_heads(key)
        value = self._split_heads(value)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / (value.size(-1) ** 0.5)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length,
                                :key_length].bool()
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value)
        return self.c_proj(self._merge_heads(attn_output))


class GPT2Block(nn.Module):
    def __init__(self, embed, heads, max_pos):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed, eps=1e-5)
        self.attn = GPT2Attention(embed, heads, max_pos)
        self.ln_2 = nn.LayerNorm(embed, eps=1e-5)
        self.c_fc = Conv1D(4 * embed, embed)
        self.c_proj = Conv1D(embed, 4 * embed)

    def forward(self, h, attention_mask):
        h = h + self.attn(self.ln_1(h), attention_mask)
        return h + self.c_proj(gelu_new(self.c_fc(self.ln_2(h))))


class GPT2LMHead(nn.Module):
    def __init__(self, vocab=96, embed=32, heads=4, layers=2, max_pos=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(max_pos, embed)
        self.h = nn.ModuleList(GPT2Block(embed, heads, max_pos)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(embed, eps=1e-5)
        self.lm_head = nn.Linear(embed, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids, attention_mask):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        attention_mask = attention_mask.view(batch_size, -1)
        attention_mask = attention_mask[:, None, None, :]
        attention_mask = attention_mask.to(dtype=torch.float32)
        attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        h = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            h = block(h, attention_mask)
        h = self.ln_f(h)
        output_shape = input_shape + (h.size(-1),)
        return self.lm_head(h.view(output_shape))


# --- BERT: word + position (a buffer sliced by the length) + token type
# embeddings, an extended additive mask, heads via x.size()[:-1] + (...),
# erf GELU, a pooler.

class BertSelfAttention(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = embed // heads
        self.all_head_size = embed
        self.query = nn.Linear(embed, embed)
        self.key = nn.Linear(embed, embed)
        self.value = nn.Linear(embed, embed)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads,
                                       self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        new_context_shape = context.size()[:-2] + (self.all_head_size,)
        return context.view(new_context_shape)


class BertLayer(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.attention = BertSelfAttention(embed, heads)
        self.attn_out = nn.Linear(embed, embed)
        self.attn_ln = nn.LayerNorm(embed, eps=1e-12)
        self.intermediate = nn.Linear(embed, 4 * embed)
        self.output = nn.Linear(4 * embed, embed)
        self.output_ln = nn.LayerNorm(embed, eps=1e-12)

    def forward(self, h, mask):
        h = self.attn_ln(self.attn_out(self.attention(h, mask)) + h)
        m = nn.functional.gelu(self.intermediate(h))
        return self.output_ln(self.output(m) + h)


class BertModel(nn.Module):
    def __init__(self, vocab=96, embed=32, heads=4, layers=2, max_pos=32):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, embed, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, embed)
        self.token_type_embeddings = nn.Embedding(2, embed)
        self.LayerNorm = nn.LayerNorm(embed, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))
        self.layer = nn.ModuleList(BertLayer(embed, heads) for _ in range(layers))
        self.pooler = nn.Linear(embed, embed)

    def forward(self, input_ids, attention_mask, token_type_ids):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, 0:seq_length]
        h = (self.word_embeddings(input_ids) +
             self.token_type_embeddings(token_type_ids) +
             self.position_embeddings(position_ids))
        h = self.LayerNorm(h)
        extended = attention_mask[:, None, None, :].to(dtype=torch.float32)
        extended = (1.0 - extended) * torch.finfo(torch.float32).min
        for layer in self.layer:
            h = layer(h, extended)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return h, pooled


# --- ViT: a strided Conv2d patch embedding, flatten(2).transpose(1, 2), a
# class token expanded to the run-time batch, learned position embeddings,
# pre-LN encoder. The patch grid is fixed by the position embeddings (as
# exported without interpolate_pos_encoding): batch is dynamic.

class ViTLayer(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(embed, eps=1e-12)
        self.attention = BertSelfAttention(embed, heads)
        self.attn_out = nn.Linear(embed, embed)
        self.layernorm_after = nn.LayerNorm(embed, eps=1e-12)
        self.intermediate = nn.Linear(embed, 4 * embed)
        self.output = nn.Linear(4 * embed, embed)

    def forward(self, h):
        h = self.attn_out(self.attention(self.layernorm_before(h), 0.0)) + h
        m = nn.functional.gelu(self.intermediate(self.layernorm_after(h)))
        return self.output(m) + h


class ViTModel(nn.Module):
    def __init__(self, image=32, patch=8, channels=3, embed=32, heads=4,
                 layers=2, classes=10):
        super().__init__()
        self.patch = patch
        self.projection = nn.Conv2d(channels, embed, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed) * 0.02)
        n = (image // patch) ** 2
        self.position_embeddings = nn.Parameter(torch.randn(1, n + 1, embed) * 0.02)
        self.layer = nn.ModuleList(ViTLayer(embed, heads) for _ in range(layers))
        self.layernorm = nn.LayerNorm(embed, eps=1e-12)
        self.classifier = nn.Linear(embed, classes)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        embeddings = self.projection(pixel_values).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        embeddings = embeddings + self.position_embeddings
        h = embeddings
        for layer in self.layer:
            h = layer(h)
        h = self.layernorm(h)
        return self.classifier(h[:, 0, :])


def export(model, name, shapes, make_inputs, input_names, output_names,
           dynamic, outdir):
    model.eval()
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, make_inputs(*shapes[0]), path,
                      opset_version=OPSET, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic,
                      do_constant_folding=True)
    for k, shape in enumerate(shapes):
        inputs = make_inputs(*shape)
        with torch.no_grad():
            out = model(*inputs)
        if not isinstance(out, tuple):
            out = (out,)
        for j, x in enumerate(inputs):
            np.save(os.path.join(outdir, f"{name}.s{k}.input_{j}.npy"), x.numpy())
        for j, y in enumerate(out):
            np.save(os.path.join(outdir, f"{name}.s{k}.output_{j}.npy"), y.numpy())
    print("wrote", path)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    bs = {0: "batch", 1: "sequence"}
    # Three (batch, sequence) shapes each, the first the export's.
    shapes = [(2, 16), (1, 7), (3, 29)]

    def text_inputs(b, t, types=False):
        ids = torch.randint(1, 96, (b, t))
        mask = torch.ones(b, t, dtype=torch.int64)
        if b > 1:
            mask[-1, t // 2:] = 0
        if types:
            tt = torch.zeros(b, t, dtype=torch.int64)
            tt[:, t // 2:] = 1
            return ids, mask, tt
        return ids, mask

    export(GPT2LMHead(), "gpt2", shapes, text_inputs,
           ["input_ids", "attention_mask"], ["logits"],
           {"input_ids": bs, "attention_mask": bs, "logits": bs}, outdir)
    export(BertModel(), "bert", shapes, lambda b, t: text_inputs(b, t, True),
           ["input_ids", "attention_mask", "token_type_ids"],
           ["last_hidden_state", "pooler_output"],
           {"input_ids": bs, "attention_mask": bs, "token_type_ids": bs,
            "last_hidden_state": bs, "pooler_output": {0: "batch"}}, outdir)
    export(ViTModel(), "vit", [(2,), (1,), (5,)],
           lambda b: (torch.randn(b, 3, 32, 32),), ["pixel_values"],
           ["logits"], {"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
           outdir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.path.join(os.path.dirname(__file__), "real"))
