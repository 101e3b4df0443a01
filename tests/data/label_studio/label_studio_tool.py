"""Label Studio's own tools on judgelab's Label Studio files (run in a venv with label-studio and label-studio-sdk).

``python label_studio_tool.py make OUT.json`` writes ``chatbot_assessment.json``: one task of
Label Studio's "Chatbot Model Assessment" template (its config and its sample data, from the
installed ``label-studio`` package's ``annotation_templates``), annotated by
``LabelInterface.generate_sample_annotation()`` of ``label-studio-sdk`` twice (two raters), as a
JSON export holds it (``id``, ``completed_by`` as a user id, ``created_username``).

``python label_studio_tool.py check TASKS.json CONFIG.xml`` checks a ``judgelab export ... --to
label-studio`` file against the labeling config written beside it with the SDK's
``LabelInterface`` (the config parses; every task has the config's data fields; every
annotation and prediction validates) and reads it with the SDK's ``Converter`` (CSV).

Not run by the test suite: label-studio-sdk pins opencv-python-headless 4.12, which pins NumPy
below 2.3, under judgelab's own NumPy. Versions used are printed.
"""

from __future__ import annotations

import csv
import json
import random
import re
import sys
import tempfile
from pathlib import Path

import label_studio_sdk
from label_studio_sdk.converter import Converter
from label_studio_sdk.label_interface import LabelInterface


def make(out: Path) -> None:
    """Write the chatbot assessment task with two SDK-generated annotations."""
    import label_studio  # the server package: only this step needs it
    import yaml
    template = Path(label_studio.__file__).parent / "annotation_templates/generative-ai/chatbot-assessment/config.yml"
    config = yaml.safe_load(template.read_text())["config"]
    sample = json.loads(re.search(r"<!--(.*)-->", config, re.S).group(1))  # the template's own sample task
    interface = LabelInterface(config)
    random.seed(44)
    annotations = []
    for uid, email in ((1, "ann@example.com"), (2, "bob@example.com")):
        annotation = interface.generate_sample_annotation()
        annotation.update(id=uid, completed_by=uid, created_username=f"{email}, {uid}")
        annotations.append(annotation)
    out.write_text(json.dumps([{"id": 1, "data": sample["data"], "annotations": annotations, "predictions": []}],
                              indent=1))
    print(f"label-studio {label_studio.__version__}, label-studio-sdk {label_studio_sdk.__version__}: wrote {out}")


def check(tasks_path: Path, config_path: Path) -> None:
    """Validate judgelab's export with the SDK; exit 1 on any error."""
    interface = LabelInterface(config_path.read_text())
    errors: list[str] = []

    def no_nan(name: str) -> None:
        errors.append(f"{tasks_path.name} holds {name}, which is not JSON")

    tasks = json.loads(tasks_path.read_text(), parse_constant=no_nan)
    for task in tasks:
        if not isinstance(task.get("id"), int):
            errors.append(f"task without an int id: {task.get('id')!r}")
        for obj in interface.objects:
            if obj.value_is_variable and task["data"].get(obj.value_name) is None:
                errors.append(f"task {task.get('id')}: no data.{obj.value_name}")
        for key in ("annotations", "predictions"):
            for item in task.get(key, []):
                if key == "annotations" and not isinstance(item.get("completed_by"), int):
                    errors.append(f"task {task['id']}: completed_by {item.get('completed_by')!r} is not a user id")
                errors += [f"task {task['id']} {key}: {e}"
                           for e in interface.validate_prediction(item, return_errors=True)]
    with tempfile.TemporaryDirectory() as tmp:
        converter = Converter(config=config_path.read_text(), project_dir=tmp)
        converter.convert(str(tasks_path), tmp, "CSV", is_dir=False)
        rows = sum(len(list(csv.reader(p.open(newline="")))) - 1 for p in Path(tmp).glob("*.csv"))
    print(f"label-studio-sdk {label_studio_sdk.__version__}: {len(tasks)} tasks, config controls "
          f"{sorted(interface.controls and [c.name for c in interface.controls])}, converter CSV rows {rows}, "
          f"errors {errors or 'none'}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(Path(sys.argv[2]))
    else:
        check(Path(sys.argv[2]), Path(sys.argv[3]))
