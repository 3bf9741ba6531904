# Source: pytorch/tutorials, intermediate_source/char_rnn_generation_tutorial.py (Generating Names with a Character-Level RNN) — rebuilt small in our own words  # noqa: E501
"""The name generator: an RNN of linear layers fed a one-hot category with each letter. The cell
makes ``rnn`` (a global the earlier cell's ``train`` reads) and calls ``train`` on random
examples; ``train`` runs the letters in a loop of its own, sums the losses (``loss += l``,
starting from the int 0), backpropagates once, and steps by hand through ``.data``:
``p.data.add_(p.grad.data, alpha=-learning_rate)``. Examples come from Python's ``random``."""

SETUP: tuple[str, ...] = (
    """\
import random
import string

import torch
import torch.nn as nn

random.seed(0)
torch.manual_seed(0)
all_letters = string.ascii_letters + " .,;'-"
n_letters = len(all_letters) + 1  # one more: the end of a name

# made-up names of three made-up peoples
category_lines = {
    "Vellish": ["Aranel", "Elorin", "Sylvar", "Thalia", "Ilyana", "Caelum"],
    "Grukkan": ["Drogmar", "Kragg", "Uzgul", "Borkha", "Grisnak", "Murgash"],
    "Mirrhan": ["Sabah", "Qasimir", "Zahra", "Nadir", "Farouq", "Layal"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)
print("# categories:", n_categories, all_categories)
""",
    """\
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        joined = n_categories + input_size + hidden_size
        self.i2h = nn.Linear(joined, hidden_size)
        self.i2o = nn.Linear(joined, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        joined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(joined)
        output = self.o2o(torch.cat((hidden, self.i2o(joined)), 1))
        output = self.dropout(output)
        return self.softmax(output), hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)
""",
    """\
def randomChoice(items):
    return items[random.randint(0, len(items) - 1)]


def randomTrainingPair():
    category = randomChoice(all_categories)
    return category, randomChoice(category_lines[category])


def categoryTensor(category):
    one_hot = torch.zeros(1, n_categories)
    one_hot[0][all_categories.index(category)] = 1
    return one_hot


def inputTensor(line):
    # the letters one-hot, first to last: (letters, 1, n_letters)
    letters = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        letters[li][0][all_letters.find(letter)] = 1
    return letters


def targetTensor(line):
    # the second letter to the last, then the end marker
    following = [all_letters.find(letter) for letter in line[1:]]
    return torch.LongTensor([*following, n_letters - 1])


def randomTrainingExample():
    category, line = randomTrainingPair()
    return categoryTensor(category), inputTensor(line), targetTensor(line)
""",
    """\
criterion = nn.NLLLoss()
learning_rate = 0.005


def train(category_tensor, input_line_tensor, target_line_tensor):
    target_line_tensor.unsqueeze_(-1)
    hidden = rnn.initHidden()
    rnn.zero_grad()

    loss = 0
    for i in range(input_line_tensor.size(0)):
        output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
        l = criterion(output, target_line_tensor[i])
        loss += l

    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)

    return output, loss.item() / input_line_tensor.size(0)
""",
)

CELL: str = """\
rnn = RNN(n_letters, 128, n_letters)

n_iters = 40
print_every = 10
all_losses = []
total_loss = 0

for iter in range(1, n_iters + 1):
    output, loss = train(*randomTrainingExample())
    total_loss += loss

    if iter % print_every == 0:
        print(f"{iter} ({iter / n_iters:.0%}) {loss:.4f}")
        all_losses.append(total_loss / print_every)
        total_loss = 0
"""
