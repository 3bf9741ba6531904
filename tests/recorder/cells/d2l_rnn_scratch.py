# Source: d2l-ai/d2l-en, chapter_recurrent-neural-networks/rnn-scratch.md (RNN from scratch) — rebuilt small in our own words  # noqa: E501
"""d2l's RNN language model from scratch: ``W_xh``, ``W_hh``, ``b_h`` made by hand as
``nn.Parameter`` in an ``RNNScratch`` (a ``d2l.Module``) that loops over time steps, ``W_hq``
and ``b_q`` in the ``RNNLMScratch`` classifier around it (one-hot inputs, perplexity noted).
An earlier cell attaches ``clip_gradients`` to ``d2l.Trainer`` by ``@d2l.add_to_class``: the
library's loop, run by the cell's ``trainer.fit``, calls back a method a notebook cell wrote.
The optimizer is the library's hand-written SGD."""

SETUP: tuple[str, ...] = (
    """\
import torch
from torch import nn
from torch.nn import functional as F

import d2l_small as d2l

NUM_WORKERS = 0
torch.manual_seed(0)
""",
    """\
class RNNScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xh = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(torch.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(torch.zeros(num_hiddens))

    def forward(self, inputs, state=None):
        # inputs: (num_steps, batch_size, num_inputs); state: (batch_size, num_hiddens)
        if state is None:
            state = torch.zeros((inputs.shape[1], self.num_hiddens))
        outputs = []
        for X in inputs:
            state = torch.tanh(X @ self.W_xh + state @ self.W_hh + self.b_h)
            outputs.append(state)
        return outputs, state
""",
    """\
class RNNLMScratch(d2l.Classifier):
    def __init__(self, rnn, vocab_size, lr=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.init_params()

    def init_params(self):
        self.W_hq = nn.Parameter(
            torch.randn(self.rnn.num_hiddens, self.vocab_size) * self.rnn.sigma
        )
        self.b_q = nn.Parameter(torch.zeros(self.vocab_size))

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("ppl", torch.exp(l), train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("ppl", torch.exp(l), train=False)

    def one_hot(self, X):
        # (batch_size, num_steps) of indices -> (num_steps, batch_size, vocab_size)
        return F.one_hot(X.T, self.vocab_size).type(torch.float32)

    def output_layer(self, rnn_outputs):
        return torch.stack([H @ self.W_hq + self.b_q for H in rnn_outputs], 1)

    def forward(self, X, state=None):
        rnn_outputs, _ = self.rnn(self.one_hot(X), state)
        return self.output_layer(rnn_outputs)

    def predict(self, prefix, num_preds, vocab):
        state, outputs = None, [vocab[prefix[0]]]
        for i in range(len(prefix) + num_preds - 1):
            X = torch.tensor([[outputs[-1]]])
            rnn_outputs, state = self.rnn(self.one_hot(X), state)
            if i < len(prefix) - 1:  # warm up on the prefix
                outputs.append(vocab[prefix[i + 1]])
            else:  # then predict, one character at a time
                Y = self.output_layer(rnn_outputs)
                outputs.append(int(Y.argmax(dim=2).reshape(1)))
        return "".join(vocab.idx_to_token[i] for i in outputs)
""",
    """\
@d2l.add_to_class(d2l.Trainer)
def clip_gradients(self, grad_clip_val, model):
    # all the gradients scaled down together when their joint norm passes the limit
    trained = [p for p in model.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in trained))
    if norm > grad_clip_val:
        for p in trained:
            p.grad[:] *= grad_clip_val / norm
""",
    """\
data = d2l.TimeMachine(batch_size=32, num_steps=16, num_train=256, num_workers=NUM_WORKERS)
print(len(data.vocab), "tokens:", data.vocab.idx_to_token)
""",
)

CELL: str = """\
rnn = RNNScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = RNNLMScratch(rnn, vocab_size=len(data.vocab), lr=1)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
trainer.fit(model, data)
print(model.predict("it has", 20, data.vocab))
"""
