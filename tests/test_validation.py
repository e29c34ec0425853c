"""The one validation layer (reclaim.validation) and the bad-input corpus of the command line.

The corpus walks the command tree: every int or float option of every command, and every
command's -o/--output, is fed absurd values, so a new command or option joins by default.
"""

from __future__ import annotations

import math
import re
import typing

import pytest
import typer
from typer.testing import CliRunner

from reclaim.cli import app
from reclaim.cli_options import chart_file
from reclaim.errors import ReclaimError
from reclaim.validation import (
    DAYS,
    PARAMETERS,
    SEED,
    Quantity,
    check_params,
    count,
    read_json_object,
    read_text,
    read_toml,
)


def _commands(group=None, path=()):
    """(words, click command) for every leaf command of the CLI."""
    group = group or typer.main.get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _unwrapped(callback):
    return getattr(callback, "__wrapped__", callback)  # typer wraps callbacks


def _numeric_options():
    for words, command in _commands():
        for param in command.params:
            annotation = param.type_descriptor.annotation
            kinds = typing.get_args(annotation) or (annotation,)
            if int in kinds or float in kinds:
                yield pytest.param(words, param, id=f"{' '.join(words)} {param.opts[-1]}")


NUMERIC = list(_numeric_options())
OUTPUTS = [
    # a chart's -o names a file, any other a folder
    pytest.param(words, ".png" if _unwrapped(p.callback) is chart_file else "", id=" ".join(words))
    for words, command in _commands()
    for p in command.params
    if "--output" in p.opts and p.callback is not None
]


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=True)


# ---- the quantities ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, -1, 0, True, "3", None, 1e300, 2**40]
)
def test_a_quantity_refuses_what_is_outside_its_declaration(value):
    with pytest.raises(ReclaimError) as err:
        DAYS.check(value, "arrival_days")
    message = str(err.value)
    assert message.startswith("arrival_days: expected a finite number > 0 and <= 36,500 (days)")
    assert "\n" not in message


def test_a_quantity_passes_what_is_inside_and_makes_reals_floats():
    assert DAYS.check(3, "x") == 3.0 and isinstance(DAYS.check(3, "x"), float)
    assert SEED.check(2**32 - 1, "x") == 2**32 - 1
    assert count("machines", 10).check(10, "x") == 10
    for bad in (1.0, -1, 2**32):
        with pytest.raises(ReclaimError, match="whole number"):
            SEED.check(bad, "--seed")


def test_component_settings_are_checked_by_name_and_unnamed_numbers_must_be_finite():
    check_params({"k1": 0.0, "window": 40, "model": "ZZZ", "flag": True}, "p")
    for params, key in [
        ({"k1": -1.0}, "p.k1"),  # a negative buffer made the pessimistic controller spin
        ({"coverage": 1.0}, "p.coverage"),
        ({"window": 0}, "p.window"),
        ({"grace_s": -5.0}, "p.grace_s"),
        ({"anything": math.nan}, "p.anything"),
    ]:
        with pytest.raises(ReclaimError, match=key.replace(".", r"\.") + ": expected"):
            check_params(params, "p")
    assert all(isinstance(q, Quantity) for q in PARAMETERS.values())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x01\x02binary", "binary data, not a text file"),
        (b"name = 1\n\xff\xfe", "line 2: not UTF-8 text (byte 0xff)"),
        (b"", "empty file"),
        (b"[a\nb", "not valid TOML"),
    ],
)
def test_files_handed_over_are_one_line_naming_the_file(tmp_path, data, message):
    path = tmp_path / "given.toml"
    path.write_bytes(data)
    with pytest.raises(ReclaimError, match=re.escape(message)) as err:
        read_toml(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_byte_order_mark_is_dropped_and_json_must_be_an_object(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_text(path).startswith("{") and read_json_object(path) == {"a": 1}
    path.write_text("[1, 2]")
    with pytest.raises(ReclaimError, match="expected a JSON object, got a list"):
        read_json_object(path)
    with pytest.raises(ReclaimError, match="no such file"):
        read_text(tmp_path / "missing.json")


# ---- the command line corpus ---------------------------------------------------------------
def test_the_corpus_found_the_options():
    assert len(NUMERIC) > 40 and len(OUTPUTS) > 8


@pytest.mark.parametrize(("words", "param"), NUMERIC)
def test_every_numeric_option_is_declared_in_the_validation_layer(words, param):
    quantity = getattr(param.callback, "quantity", None)
    assert isinstance(quantity, Quantity), f"{param.opts}: declare it with number_option"
    # finite, and bounded where a count or a time could run for ever
    assert not quantity.integer or quantity.le is not None or quantity.lt is not None


@pytest.mark.parametrize(("words", "param"), NUMERIC)
@pytest.mark.parametrize("value", ["nan", "inf", "-1e30", "1e30"])
def test_every_numeric_option_refuses_absurd_values_in_one_line(words, param, value):
    annotation = typing.get_args(param.type_descriptor.annotation) or (
        param.type_descriptor.annotation,
    )
    if int in annotation and float not in annotation:
        value = {"nan": "-1", "inf": "99999999999999", "-1e30": "-99999999999", "1e30": "0"}[value]
        if param.callback.quantity.accepts(int(value)):
            pytest.skip(f"{value} lies in {param.opts[-1]}'s range")
    done = _invoke(*words, param.opts[-1], value)
    assert done.exit_code != 0
    if isinstance(done.exception, ReclaimError):
        message = str(done.exception)
        assert message.startswith(param.opts[-1]) and "\n" not in message
    else:  # refused by typer itself (not a number at all): a usage error, exit 2
        assert done.exit_code == 2, done.output


@pytest.mark.parametrize(("words", "suffix"), OUTPUTS)
@pytest.mark.parametrize("target", ["/dev/null/out", "/proc/reclaim-out/x"])
def test_every_output_is_checked_for_writability_before_any_work(words, suffix, target):
    done = _invoke(*words, "-o", target + suffix)
    assert isinstance(done.exception, ReclaimError), done.output
    message = str(done.exception)
    assert message.startswith("-o/--output: ") and target.split("/")[1] in message, message
    assert "\n" not in message
