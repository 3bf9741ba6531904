# From: pytorch/pytorch#1020: 'Ambiguous docs+confusing behavior of softmax for 3+ dimensions'
# mypy: ignore-errors
import warnings

import torch
import torch.nn.functional as F
from torch import nn

warnings.filterwarnings("ignore", "Implicit dimension choice")
torch.manual_seed(94)
tagger = nn.LSTM(8, 16, batch_first=True)
head = nn.Linear(16, 5)
optimizer = torch.optim.SGD([*tagger.parameters(), *head.parameters()], lr=0.1)
sentences = [torch.randn(1, n, 8) for n in (7, 5, 9, 6)]
tags = [torch.randint(0, 5, (s.shape[1],)) for s in sentences]

for epoch in range(3):
    for sentence, target in zip(sentences, tags, strict=True):
        scores = head(tagger(sentence)[0])
        probs = F.softmax(scores)
        loss = F.nll_loss(torch.log(probs[0]), target)  # doctor: softmax_before_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
