# What a user's type checker refuses: each line whose comment is `E: <message>`
# must be refused by mypy with an error containing that message, at that line,
# and no other line may be (tests/test_stubs.py), as numpy's
# typing/tests/data/fail files.

import numpy as np
import numpy.typing as npt

import trilu

AR_f4: npt.NDArray[np.float32]

trilu.triu([[1, 2], [3, 4]], k="1")  # E: No overload variant of "triu" matches
trilu.tril(AR_f4, 1.5)  # E: No overload variant of "tril" matches
trilu.band(AR_f4, order="X")  # E: No overload variant of "band" matches
trilu.mirror(AR_f4, upper=1)  # E: No overload variant of "mirror" matches
trilu.pack(AR_f4, out=[0.0])  # E: No overload variant of "pack" matches
trilu.pack(AR_f4, order="K")  # E: No overload variant of "pack" matches
trilu.unpack(AR_f4, mirror="T")  # E: No overload variant of "unpack" matches
trilu.to_banded(AR_f4, 1)  # E: No overload variant of "to_banded" matches
trilu.attention_mask(3, align="middle")  # E: No overload variant of "attention_mask"
trilu.band_mask(3.0)  # E: No overload variant of "band_mask" matches
trilu.tri(3.0)  # E: No overload variant of "tri" matches argument type "float"
trilu.triu_indices(4, m="5")  # E: Argument "m" to "triu_indices" has incompatible
