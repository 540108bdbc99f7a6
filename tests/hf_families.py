"""Tiny random-weight models of any ``transformers`` model type and the two routes that check them: the package's
:mod:`seqlab.zoo.shrink` (the shrinker) and :mod:`seqlab.zoo.checks` (paths against the Jacobian, work against
``FlopCounterMode``), imported here under the names the sweep and the tests have used since issue 35."""

from seqlab.zoo.checks import *  # noqa: F401,F403
from seqlab.zoo.checks import PathVerdict, WorkVerdict, compare_paths, compare_work, jacobian_blocks, sources_alone  # noqa: F401
from seqlab.zoo.shrink import *  # noqa: F401,F403
from seqlab.zoo.shrink import (ADJUSTMENTS, MAX_POSITIONS, SIZES, WIDE_INIT, Adjustment, Family, Refused,  # noqa: F401
                               _line, build, build_config, chunk_multiple, computed_dtype, embeddings, family,
                               input_width, last_hidden, model_class, model_types, real_config, shrink_config,
                               shrink_values, tiny_config)
