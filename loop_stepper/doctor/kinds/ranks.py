"""A data-parallel job's ranks (``doctor/ranks.py`` on each rank, ``doctor/job.py`` across
them): the bugs only several processes can have, each named with the ranks it showed on."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "ranks"

SAMPLER_WITHOUT_SET_EPOCH = Kind(
    "sampler_without_set_epoch",
    FAMILY,
    "a shuffling `DistributedSampler` gave the same order in two epochs: `set_epoch()` was not "
    "called (or with the same epoch), so every epoch reads the data in one order",
    """
    sampler = DistributedSampler(dataset, shuffle=True)
    for epoch in range(epochs):
        for x, y in DataLoader(dataset, sampler=sampler):    # the same order every epoch
            ...
    """,
    "call sampler.set_epoch(epoch) at the start of each epoch",
    "the DistributedSampler gave this rank the same order in epoch {epoch} as in epoch "
    "{before} (first indices {first})",
)
RANKS_SAME_SAMPLES = Kind(
    "ranks_same_samples",
    FAMILY,
    "every rank of a `DistributedDataParallel` job read the same batches (the same numbers in "
    "its first batches): no `DistributedSampler`, so each rank trains on all the data and the "
    "all-reduce averages copies",
    """
    model = DDP(net)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)   # every rank: all the data
    """,
    "give the DataLoader a DistributedSampler(dataset) (and call set_epoch each epoch)",
    "ranks {ranks} read the same batches ({batches} first batches equal on every rank), so "
    "each trains on all the data and one epoch is {world} epochs' work",
)
STEP_AFTER_NO_SYNC = Kind(
    "step_after_no_sync",
    FAMILY,
    "a step read gradients whose last forward ran inside `no_sync()` (or with autograd off): "
    "that backward was not all-reduced, so each rank steps its own gradient and the weights "
    "drift apart",
    """
    with model.no_sync():
        loss = loss_fn(model(x), y)      # the last micro-batch, not synced
    loss.backward()
    optimizer.step()                     # each rank's own gradient
    """,
    "run the last micro-batch's forward and backward outside no_sync()",
    "this step read gradients whose last forward (line {forward}) ran inside no_sync(): they "
    "were never all-reduced, so the ranks step apart",
)
LOSS_DIVIDED_BY_WORLD_SIZE = Kind(
    "loss_divided_by_world_size",
    FAMILY,
    "one backward per step of a loss divided by the world size through a "
    "`DistributedDataParallel` model: DDP already averages the gradients over the ranks, so "
    "the gradient (the effective lr) is 1/world_size of the intended",
    """
    loss = loss_fn(model(x), y) / dist.get_world_size()   # DDP averages already
    loss.backward()
    """,
    "do not divide the loss by the world size: DDP averages the gradients itself",
    "the loss was divided by {divisor}, the world size, before backward(); DDP averages the "
    "gradients over the ranks already, so each step is 1/{divisor} of the intended",
)
RANKS_PARAMS_DIFFER = Kind(
    "ranks_params_differ",
    FAMILY,
    "a parameter's numbers differ across the ranks after a step of a data-parallel model; named "
    "at the statement one rank ran and another did not (a step, a clear, a load, a mode "
    "change), else at the step where they first differ",
    """
    model = DDP(net)
    if rank == 0:
        model.load_state_dict(torch.load("ckpt.pt"))   # after wrapping: rank 0 only
    """,
    "run the statement on every rank (load before wrapping in DDP, or on every rank with "
    "map_location; step and clear on every rank)",
    "{param} differs across the ranks at backward {backward} ({values}){why}",
)
RANKS_MODES_DIFFER = Kind(
    "ranks_modes_differ",
    FAMILY,
    "the ranks' `DistributedDataParallel` forwards ran in different modes: parts whose numbers "
    "the mode changes (dropout, BatchNorm) were in eval mode on some ranks and training on the "
    "others, so the ranks' gradients come from different models before DDP averages them",
    """
    for epoch in range(epochs):
        train_one_epoch(model)           # no model.train() at the start of an epoch
        if rank == 0:
            model.eval()                 # rank 0 trains the next epoch in eval mode
            evaluate(model.module)
    """,
    "put the model back in training mode on every rank (model.train() at the start of each "
    "epoch), or evaluate a copy",
    "at backward {backward} ranks {evals} ran {parts} in eval mode while ranks {trains} trained",
)
RANKS_RUNNING_STATS_DIFFER = Kind(
    "ranks_running_stats_differ",
    FAMILY,
    "a rank saved or evaluated BatchNorm running statistics that differ from the other ranks' "
    "at that moment: with `broadcast_buffers=False` and no SyncBatchNorm each rank keeps "
    "statistics of its own data, so the saved model (or the evaluation) depends on the rank",
    """
    model = DDP(net_with_batchnorm, broadcast_buffers=False)   # each rank its own statistics
    ...
    if rank == 0:
        torch.save(model.module.state_dict(), "model.pt")      # rank 0's statistics only
    """,
    "convert the norm layers with nn.SyncBatchNorm.convert_sync_batchnorm(model) before "
    "wrapping, or keep DDP's broadcast_buffers=True",
    "this {what} read the running statistics of layer {layer}, which differ across the "
    "ranks (running_mean[0]: {values})",
)
OPTIMIZER_BEFORE_FULLY_SHARD = Kind(
    "optimizer_before_fully_shard",
    FAMILY,
    "no parameter an optimizer holds got a gradient, while the model's sharded parameters "
    "(FSDP's `DTensor`s, which no optimizer holds) got them: the optimizer was made before "
    "`fully_shard()` replaced the model's parameters, so it steps the old ones and the model "
    "never moves",
    """
    optimizer = torch.optim.AdamW(model.parameters())
    fully_shard(model)                   # new, sharded parameters; the optimizer keeps the old
    """,
    "make the optimizer after fully_shard(model), from model.parameters()",
    "{optimizer} holds parameters {model} had before fully_shard(): the sharded ones that "
    "replaced them got the gradients, this optimizer none",
)
COLLECTIVE_HANG = Kind(
    "collective_hang",
    FAMILY,
    "the ranks stopped moving for the timeout while one waits in a collective "
    "(`all_reduce`, a DDP backward, a `barrier`) that another rank is not running, or a "
    "rank's collective failed because the others had left it",
    """
    if rank == 0:
        dist.all_reduce(total)           # rank 1 never gets here
    """,
    "run every collective (and every DDP forward and backward) on every rank, in the same order",
    "rank {rank} waits at {waits} while {others}{how}",
)
