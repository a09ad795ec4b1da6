"""Config files read as Snakemake reads them, with a YAML syntax error naming file, line and column.

Snakemake loads a ``--configfile`` in its command-line layer, before any workflow code runs, and
reports a syntax error only as "not valid JSON or YAML"; ./run.sh (worldmemory.workflow.launch)
checks each one first, and the Snakefile reads its embedded default through load_config_file.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path


def _source_line(text: str, line: int) -> str | None:
    lines = text.splitlines()
    return lines[line] if 0 <= line < len(lines) else None


def _yaml_error(path: Path, text: str, error) -> ValueError:
    """``FILE:LINE:COLUMN: problem`` (1-based, where YAML stopped), the line with a caret under
    the column, and what to do."""
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or str(error)
    if mark is None:
        return ValueError(f"{path}: not valid YAML: {problem}\n"
                          f"hint: correct {path} (YAML syntax) and run the same command again")
    message = [f"{path}:{mark.line + 1}:{mark.column + 1}: {problem}"]
    context = error.context_mark
    if error.context and context is not None and (context.line, context.column) != (mark.line, mark.column):
        message.append(f"  ({error.context} at line {context.line + 1}, column {context.column + 1})")
    lines = sorted({mark.line} | ({context.line} if error.context and context is not None else set()))
    width = len(str(lines[-1] + 1))
    for line in lines:
        shown = _source_line(text, line)
        if shown is not None:  # tabs as one space, so that the caret stays under the column
            message.append(f"  {line + 1:>{width}} | {shown.expandtabs(1)}")
            if line == mark.line:
                message.append(f"  {'':>{width}} | {' ' * mark.column}^")
    where = " or ".join(f"line {line + 1}" for line in lines)
    message.append(f"hint: correct {where} of {path} and run the same command again (YAML indents "
                   "with spaces, never tabs; a value containing ': ' or ' #' must be quoted)")
    return ValueError("\n".join(message))


def load_config_file(path) -> dict:
    """A JSON or YAML config file as a dict, read as Snakemake reads it (JSON first, then YAML with
    the same loader, YTE templates when the file asks for them). A syntax error raises a
    ValueError that starts with ``FILE:LINE:COLUMN: problem``; so do a missing file and a file
    whose top level is not a mapping."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read the config file: {error}") from None
    try:
        config = json.loads(text, object_pairs_hook=collections.OrderedDict)
    except ValueError:
        try:
            config = yaml.load(text, Loader=yaml.FullLoader)
        except yaml.MarkedYAMLError as error:
            raise _yaml_error(path, text, error) from None
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from None
        if isinstance(config, dict) and config.get("__use_yte__"):
            import yte

            config = yte.process_yaml(text, require_use_yte=True)
    if not isinstance(config, dict):
        kind = "empty" if config is None else f"a {type(config).__name__}"
        raise ValueError(f"{path}:1:1: the config must be a mapping of KEY: VALUE at the top level, "
                         f"but the file is {kind}")
    return config
