# Source: pytorch/tutorials, beginner_source/nlp/sequence_models_tutorial.py (Sequence Models and LSTMs) — rebuilt small in our own words  # noqa: E501
"""The part-of-speech tagger: an embedding, an ``nn.LSTM`` and a linear layer to tag scores
(``log_softmax``), trained one sentence at a time on two sentences, ``model.zero_grad()``
before each, ``NLLLoss`` and SGD at lr 0.1, the loop in the cell."""

SETUP: tuple[str, ...] = (
    """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(1)


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


# two tagged sentences: determiners, nouns and verbs
training_data = [
    ("A cat chased the mouse".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("Everyone likes that song".split(), ["NN", "V", "DET", "NN"]),
]
word_to_ix = {}
for words, _ in training_data:
    for word in words:
        word_to_ix.setdefault(word, len(word_to_ix))
tag_to_ix = {"DET": 0, "NN": 1, "V": 2}
print(word_to_ix)

EMBEDDING_DIM = 6  # tiny, so that the weights can be watched
HIDDEN_DIM = 6
""",
    """\
class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        # reads the embeddings in order, one hidden state of hidden_dim per word
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        return F.log_softmax(tag_space, dim=1)


model = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, len(word_to_ix), len(tag_to_ix))
loss_function = nn.NLLLoss()
optimizer = optim.SGD(model.parameters(), lr=0.1)

with torch.no_grad():  # the scores before any training
    print(model(prepare_sequence(training_data[0][0], word_to_ix)).argmax(dim=1))
""",
)

CELL: str = """\
for epoch in range(30):  # toy data: many passes over two sentences
    for sentence, tags in training_data:
        # gradients add up in PyTorch: clear them for each sentence
        model.zero_grad()

        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = prepare_sequence(tags, tag_to_ix)

        tag_scores = model(sentence_in)

        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()

with torch.no_grad():
    tag_scores = model(prepare_sequence(training_data[0][0], word_to_ix))
    print(tag_scores.argmax(dim=1), loss.item())
"""
