"""Estimated cost of token counts, from the genai-prices table.

Used only where the agent reports no cost of its own.  The table is the one the
installed ``genai-prices`` package ships (no network: its auto-update is never
started); prices are looked up at the time of the usage, so an old session is
priced at the prices of its day.  Token counts follow normalize's meaning, which
is also genai-prices': ``input`` includes the cached reads and writes, priced at
their own (cache) rates.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from functools import lru_cache

__all__ = ["ESTIMATED", "estimate", "provider_of", "table_version"]

#: ``cost_source`` of an estimated cost (an agent's own is ``agent``).
ESTIMATED = "estimated"


@lru_cache(maxsize=1)
def table_version() -> str | None:
    """The genai-prices version the estimates come from, or None when it is not installed."""
    try:
        import genai_prices
    except ImportError:
        return None
    return str(genai_prices.__version__)


@lru_cache(maxsize=256)
def _known(model: str) -> bool:
    import genai_prices

    try:
        genai_prices.calc_price(genai_prices.Usage(input_tokens=0, output_tokens=0), model)
    except LookupError:
        return False
    return True


def estimate(
    model: str | None,
    *,
    input: int | None,
    output: int | None,
    cache_read: int | None = None,
    cache_write: int | None = None,
    ts: str | None = None,
) -> float | None:
    """The cost in USD of these tokens on ``model``, or None when the model or the table is unknown."""
    if not model or table_version() is None or (input is None and output is None) or not _known(model):
        return None
    import genai_prices

    when: datetime | None = None
    if ts is not None:
        try:
            when = datetime.fromisoformat(ts)
        except ValueError:
            when = None
    counts = {"input_tokens": input or 0, "output_tokens": output or 0}
    if cache_read:
        counts["cache_read_tokens"] = cache_read
    if cache_write:
        counts["cache_write_tokens"] = cache_write
    try:
        price = genai_prices.calc_price(genai_prices.Usage(**counts), model, genai_request_timestamp=when)
    except LookupError:  # no price of this model at that date
        return None
    except ValueError:  # counts the table refuses (cached reads beyond the input): not priced rather than guessed
        return None
    total: Decimal = price.total_price
    return float(total)


#: genai-prices' provider ids as the OpenTelemetry GenAI conventions name them (``gen_ai.provider.name``).
_OTEL_PROVIDERS = {
    "google": "gcp.gemini",
    "mistral": "mistral_ai",
    "x-ai": "x_ai",
    "aws": "aws.bedrock",
    "azure": "azure.ai.openai",
}


@lru_cache(maxsize=256)
def provider_of(model: str | None) -> str | None:
    """The provider of a model, as ``gen_ai.provider.name`` spells it, or None when the table does not know it."""
    if not model or table_version() is None or not _known(model):
        return None
    import genai_prices

    provider = genai_prices.calc_price(genai_prices.Usage(input_tokens=0, output_tokens=0), model).provider.id
    return _OTEL_PROVIDERS.get(provider, provider)
