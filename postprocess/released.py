"""Public architecture facts of released Pre-LN models (data/released_models.csv), overlaid on
the aspect-ratio plots as the paper does."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

RELEASED_MODELS_CSV = Path(__file__).parent / "data" / "released_models.csv"


@dataclass(frozen=True)
class ReleasedModel:
    name: str
    params_total: int
    n_layer: int
    d_model: int
    source: str

    @property
    def aspect_ratio(self) -> float:
        return self.d_model / self.n_layer


def load_released_models(path: str | Path = RELEASED_MODELS_CSV) -> list[ReleasedModel]:
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line for line in f if line.strip() and not line.lstrip().startswith("#")]
    return [ReleasedModel(row["name"], int(row["params_total"]), int(row["n_layer"]),
                          int(row["d_model"]), row["source"])
            for row in csv.DictReader(lines)]
