# Source: rasbt/LLMs-from-scratch, ch05/01_main-chapter-code/ch05.ipynb (Pretraining on unlabeled data) — rebuilt small in our own words  # noqa: E501
"""Chapter 5's ``train_model_simple``: a tiny GPT (two blocks of causal multi-head attention,
hand-written ``LayerNorm`` and ``GELU``), a sliding-window ``Dataset`` of token ids, and the
loop in an earlier cell's function, which the cell calls with AdamW. Every ``eval_freq``
steps it calls ``evaluate_model`` (``model.eval()``, ``torch.no_grad()``, a few batches of
each loader through ``calc_loss_loader``, then ``model.train()``), and at each epoch's end
``generate_and_print_sample`` decodes a greedy continuation. A character tokenizer stands in
for tiktoken's GPT-2 encoding."""

SETUP: tuple[str, ...] = (
    """\
import random
import string

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

NUM_WORKERS = 0
torch.manual_seed(123)


class CharTokenizer:
    # one id per character of a fixed alphabet, in place of GPT-2's BPE
    def __init__(self, alphabet):
        self.alphabet = alphabet
        self.ids = {ch: i for i, ch in enumerate(alphabet)}

    def encode(self, text):
        return [self.ids[ch] for ch in text]

    def decode(self, ids):
        return "".join(self.alphabet[i] for i in ids)


tokenizer = CharTokenizer(string.ascii_letters + " .,;'!?")

# about 3 KB of seeded sentences in place of "The Verdict"
vocabulary = "every effort moves you the painter said his wife had a quiet house and".split()
scribe = random.Random(123)
text_data = " ".join(
    " ".join(scribe.choices(vocabulary, k=scribe.randint(4, 10))).capitalize() + "."
    for _ in range(55)
)
print(len(text_data), "characters,", len(tokenizer.encode(text_data)), "tokens")
""",
    """\
class GPTDatasetV1(Dataset):
    # windows of max_length token ids every `stride` tokens, and the same shifted by one
    def __init__(self, txt, tokenizer, max_length, stride):
        self.input_ids, self.target_ids = [], []
        token_ids = tokenizer.encode(txt)
        for start in range(0, len(token_ids) - max_length, stride):
            window = token_ids[start : start + max_length + 1]
            self.input_ids.append(torch.tensor(window[:-1]))
            self.target_ids.append(torch.tensor(window[1:]))

    def __len__(self):
        return len(self.input_ids)

    def __getitem__(self, idx):
        return self.input_ids[idx], self.target_ids[idx]


def create_dataloader_v1(txt, tokenizer, batch_size, max_length, stride, shuffle, drop_last):
    dataset = GPTDatasetV1(txt, tokenizer, max_length, stride)
    return DataLoader(
        dataset, batch_size, shuffle=shuffle, drop_last=drop_last, num_workers=NUM_WORKERS
    )
""",
    """\
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must split evenly into heads"
        self.d_out, self.num_heads = d_out, num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        # 1 above the diagonal: the future a token must not see
        future = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("mask", future)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        # (b, tokens, d_out) -> (b, heads, tokens, head_dim)
        split = lambda t: t.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = queries @ keys.transpose(2, 3)
        scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        weights = self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context)


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class GELU(nn.Module):
    def forward(self, x):  # the tanh approximation
        inner = torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))
        return 0.5 * x * (1 + torch.tanh(inner))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        width = cfg["emb_dim"]  # out to four times as wide, then back
        self.layers = nn.Sequential(
            nn.Linear(width, 4 * width), GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            context_length=cfg["context_length"],
            dropout=cfg["drop_rate"],
            num_heads=cfg["n_heads"],
            qkv_bias=cfg["qkv_bias"],
        )
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_resid = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        # pre-norm, and a shortcut around each half
        x = x + self.drop_resid(self.att(self.norm1(x)))
        return x + self.drop_resid(self.ff(self.norm2(x)))


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        _, seq_len = in_idx.shape
        positions = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = self.drop_emb(self.tok_emb(in_idx) + positions)
        return self.out_head(self.final_norm(self.trf_blocks(x)))


def generate_text_simple(model, idx, max_new_tokens, context_size):
    # greedy: append the likeliest next token, max_new_tokens times
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx[:, -context_size:])
        idx_next = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx
""",
    """\
def text_to_token_ids(text, tokenizer):
    return torch.tensor(tokenizer.encode(text)).unsqueeze(0)  # a batch of one


def token_ids_to_text(token_ids, tokenizer):
    return tokenizer.decode(token_ids.squeeze(0).tolist())


def calc_loss_batch(input_batch, target_batch, model, device):
    input_batch, target_batch = input_batch.to(device), target_batch.to(device)
    logits = model(input_batch)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), target_batch.flatten())


def calc_loss_loader(data_loader, model, device, num_batches=None):
    if len(data_loader) == 0:
        return float("nan")
    num_batches = len(data_loader) if num_batches is None else min(num_batches, len(data_loader))
    total_loss = 0.0
    for i, (input_batch, target_batch) in enumerate(data_loader):
        if i >= num_batches:
            break
        total_loss += calc_loss_batch(input_batch, target_batch, model, device).item()
    return total_loss / num_batches


def evaluate_model(model, train_loader, val_loader, device, eval_iter):
    model.eval()
    with torch.no_grad():
        train_loss = calc_loss_loader(train_loader, model, device, num_batches=eval_iter)
        val_loss = calc_loss_loader(val_loader, model, device, num_batches=eval_iter)
    model.train()
    return train_loss, val_loss


def generate_and_print_sample(model, tokenizer, device, start_context):
    model.eval()
    context_size = model.pos_emb.weight.shape[0]
    encoded = text_to_token_ids(start_context, tokenizer).to(device)
    with torch.no_grad():
        token_ids = generate_text_simple(model, encoded, 50, context_size)
    print(token_ids_to_text(token_ids, tokenizer))
    model.train()


def train_model_simple(
    model, train_loader, val_loader, optimizer, device, num_epochs,
    eval_freq, eval_iter, start_context, tokenizer,
):
    train_losses, val_losses, track_tokens_seen = [], [], []
    tokens_seen, global_step = 0, -1

    for epoch in range(num_epochs):
        model.train()
        for input_batch, target_batch in train_loader:
            optimizer.zero_grad()  # the last batch's gradients are spent
            loss = calc_loss_batch(input_batch, target_batch, model, device)
            loss.backward()
            optimizer.step()
            tokens_seen += input_batch.numel()
            global_step += 1

            if global_step % eval_freq == 0:  # every so often, both losses
                train_loss, val_loss = evaluate_model(
                    model, train_loader, val_loader, device, eval_iter
                )
                train_losses.append(train_loss)
                val_losses.append(val_loss)
                track_tokens_seen.append(tokens_seen)
                print(
                    f"Ep {epoch + 1} (Step {global_step:06d}): "
                    f"Train loss {train_loss:.3f}, Val loss {val_loss:.3f}"
                )

        generate_and_print_sample(model, tokenizer, device, start_context)

    return train_losses, val_losses, track_tokens_seen
""",
    """\
GPT_CONFIG_TINY = {
    "vocab_size": len(tokenizer.alphabet),
    "context_length": 16,
    "emb_dim": 32,
    "n_heads": 2,
    "n_layers": 2,
    "drop_rate": 0.1,
    "qkv_bias": False,
}
device = torch.device("cpu")

split_idx = int(0.9 * len(text_data))
train_loader = create_dataloader_v1(
    text_data[:split_idx], tokenizer, batch_size=8, max_length=16, stride=16,
    shuffle=True, drop_last=True,
)
val_loader = create_dataloader_v1(
    text_data[split_idx:], tokenizer, batch_size=8, max_length=16, stride=16,
    shuffle=False, drop_last=False,
)
print(len(train_loader), "training batches,", len(val_loader), "validation batches")
""",
)

CELL: str = """\
torch.manual_seed(123)
model = GPTModel(GPT_CONFIG_TINY)
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.001, weight_decay=0.1)

num_epochs = 2
train_losses, val_losses, tokens_seen = train_model_simple(
    model, train_loader, val_loader, optimizer, device,
    num_epochs=num_epochs, eval_freq=5, eval_iter=5,
    start_context="Every effort moves you", tokenizer=tokenizer,
)
"""
