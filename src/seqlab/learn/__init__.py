"""Small models trained on synthetic tasks, so that path length shows up as what a model can learn.

:mod:`seqlab.learn.tasks` makes the data (one task per lesson claim: recall L3/L4, order L10,
position L10), :mod:`seqlab.learn.models` builds the models at one parameter budget,
:mod:`seqlab.learn.training` trains one of them and measures it, and :mod:`seqlab.learn.selection`
picks each model's learning rate on a validation split and summarises the seeds.
:mod:`seqlab.learn.sweep` runs a list of independent runs in this process, on local worker processes
or as Ray tasks, keeping each in a results file as it ends; :mod:`seqlab.studies.learn` plans the
whole sweep and runs it. Nothing is imported here, so ``import seqlab.learn`` does not import torch.
"""

#: The lesson's models of ``seqlab learn`` (torch-free; :data:`seqlab.learn.models.MODELS` adds every mixer that
#: learns, from :mod:`seqlab.layers.mixers`).
LESSON_MODELS = ("elman", "lstm", "gru", "attention", "attention-pe", "mlp")
