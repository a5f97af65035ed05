"""Decimal arithmetic at Spark's precision.

Spark's decimals hold up to 38 digits; Python's default decimal context keeps 28 significant digits and rounds
(or raises ``InvalidOperation``) past them. Until session 30 the column statistics of a ``decimal(38, 18)``
column were scaled in that context: a file whose maximum was ``12345678901234567890.123456789012345678`` was
indexed with ``...890.12345679``, and ``dec = <that value>`` skipped the file holding it (a probe). Every scaling
of a statistic or a literal goes through this module's context, wide enough for any 38-digit value at any scale.
"""

from __future__ import annotations

import decimal
from decimal import Decimal

#: a context no Spark decimal can overflow (38 digits, shifted by a scale of up to 38 either way)
EXACT = decimal.Context(prec=120, Emax=999_999, Emin=-999_999)


def from_unscaled(unscaled: int, scale: int) -> Decimal:
    """The decimal ``unscaled * 10**-scale``, exactly."""
    return Decimal(unscaled).scaleb(-scale, context=EXACT)


def to_unscaled(value: Decimal | str | float | int, scale: int, rounding: str = decimal.ROUND_HALF_UP) -> int:
    """``value * 10**scale`` as an integer (rounded by ``rounding`` where ``value`` has more decimals)."""
    d = value if isinstance(value, Decimal) else Decimal(str(value))
    return int(d.scaleb(scale, context=EXACT).to_integral_value(rounding=rounding, context=EXACT))


def quantized(value: Decimal, scale: int, rounding: str) -> Decimal:
    """``value`` with exactly ``scale`` decimals (rounded by ``rounding``)."""
    return value.quantize(Decimal(1).scaleb(-scale, context=EXACT), rounding=rounding, context=EXACT)
