"""mqx.load_config / parse_config run the C++ parser: the cases of tests/unit/config_test.cpp, and
the same message as mqxd itself prints for the same bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import mqx
from conftest import requires_daemon
from mqx.binaries import find_binary

REPOSITORY = Path(__file__).resolve().parents[2]


def error_of(toml: str) -> str:
    with pytest.raises(mqx.ConfigError) as caught:
        mqx.parse_config(toml, "test.toml")
    return str(caught.value)


def test_default_file_parses_to_the_built_in_defaults():
    parsed = mqx.load_config(path=str(REPOSITORY / "configs" / "default.toml"), environment={})
    built_in = mqx.load_config(environment={})
    assert parsed.as_dict() == built_in.as_dict()
    assert built_in["memory.page_size"] == 64 << 20
    assert built_in["policy.replacement"] == "cdr"
    assert built_in["daemon.admission"] == "adaptive"



def test_as_dict_lists_every_key_of_the_default_file():
    with open(REPOSITORY / "configs" / "default.toml", "rb") as file:
        documented = {f"{section}.{key}" for section, table in tomllib.load(file).items() for key in table}
    config = mqx.parse_config('[kernelopt]\nresizable_kernels = ["a", "b"]\n[daemon]\nmps = "detect"\n')
    assert set(config.as_dict()) == documented
    assert config["kernelopt.resizable_kernels"] == ["a", "b"]
    assert config["daemon.mps"] == "detect"
    assert all(config[key] == value for key, value in config.as_dict().items())

def test_parses_sizes_and_choices():
    config = mqx.parse_config(
        '[memory]\npage_size = "16MiB"\ndevice_memory_limit = 1073741824\n'
        '[policy]\nreplacement = "LFU"\neviction_granularity = "page"\nlatency_factor = 0.5\n'
        '[optimizations]\nreference_detection = "scan"\n'
        '[daemon]\nadmission = "fix"\nfix_n = 3\ninstance = "abc"\n'
    )
    assert config["memory.page_size"] == 16 << 20
    assert config["memory.device_memory_limit"] == 1 << 30
    assert config["policy.replacement"] == "lfu"
    assert config["policy.eviction_granularity"] == "page"
    assert config["policy.latency_factor"] == 0.5
    assert config["optimizations.reference_detection"] == "scan"
    assert (config.admission, config["daemon.fix_n"], config.instance) == ("fix", 3, "abc")
    with pytest.raises(KeyError):
        config["memory.nothing"]


@pytest.mark.parametrize(
    "toml, key",
    [
        ("[memory]\npage_sise = 1", "memory.page_sise"),
        ("[memroy]\npage_size = 1", "memroy"),
        ('[policy]\nreplacement = "fifo"', "policy.replacement"),
        ("[policy]\nlatency_factor = 2.0", "policy.latency_factor"),
        ('[policy]\nlatency_factor = "x"', "policy.latency_factor"),
        ('[memory]\npage_size = "3MiB"', "memory.page_size"),
        ('[memory]\npage_size = "lots"', "memory.page_size"),
        ("[memory]\npage_size = -4", "memory.page_size"),
        ("[optimizations]\nlazy_transfer = 1", "optimizations.lazy_transfer"),
        ('[sim]\ngranularity = "128MiB"', "sim.granularity"),
        ("[daemon]\nfix_n = 0", "daemon.fix_n"),
        ('[daemon]\nadmission = "lottery"', "daemon.admission"),
        ('[daemon]\ninstance = "a/b"', "daemon.instance"),
        ("top = 1", "top"),
    ],
)
def test_bad_input_names_the_key_on_one_line(toml, key):
    error = error_of(toml)
    assert key in error
    assert "\n" not in error
    assert isinstance(mqx.ConfigError(error), ValueError)


def test_syntax_errors_name_the_file():
    assert "test.toml:" in error_of("[memory\n")


def test_environment_overrides_and_rejects_unknown_variables(tmp_path):
    config = mqx.load_config(
        environment={
            "MQX_MEMORY_PAGE_SIZE": "4MiB",
            "MQX_POLICY_REPLACEMENT": "mru",
            "MQX_OPTIMIZATIONS_LAZY_TRANSFER": "off",
            "MQX_SIM_COPY_BANDWIDTH_GBPS": "12.5",
            "HOME": "/root",
        }
    )
    assert config["memory.page_size"] == 4 << 20
    assert config["policy.replacement"] == "mru"
    assert config["optimizations.lazy_transfer"] is False
    assert config["sim.copy_bandwidth_gbps"] == 12.5
    with pytest.raises(mqx.ConfigError, match="MQX_MEMORY_PAGESIZE"):
        mqx.load_config(environment={"MQX_MEMORY_PAGESIZE": "1"})
    with pytest.raises(mqx.ConfigError, match="MQX_POLICY_LATENCY_FACTOR"):
        mqx.load_config(environment={"MQX_POLICY_LATENCY_FACTOR": "-1"})
    # MQX_CONFIG names the file; the environment overrides it.
    file = tmp_path / "mqx.toml"
    file.write_text('[daemon]\ncapacity = "3GiB"\nadmission = "peak"\n')
    loaded = mqx.load_config(environment={"MQX_CONFIG": str(file), "MQX_DAEMON_ADMISSION": "fix"})
    assert (loaded.capacity, loaded.admission) == (3 << 30, "fix")
    assert mqx.load_config(path=str(file), environment={}).admission == "peak"
    with pytest.raises(mqx.ConfigError, match="MQX_CONFIG: cannot read"):
        mqx.load_config(environment={"MQX_CONFIG": str(tmp_path / "missing.toml")})


def test_the_process_environment_is_the_default(monkeypatch):
    monkeypatch.setenv("MQX_DAEMON_FIX_N", "5")
    assert mqx.load_config()["daemon.fix_n"] == 5
    monkeypatch.setenv("MQX_DAEMON_FIX_N", "99")
    with pytest.raises(mqx.ConfigError, match="MQX_DAEMON_FIX_N"):
        mqx.load_config()


def test_size_parsing():
    assert mqx.parse_size("4096") == 4096
    assert mqx.parse_size("512KiB") == 512 * 1024
    assert mqx.parse_size("2 GiB") == 2 << 30
    assert mqx.parse_size("1.5MiB") == 3 << 19
    assert mqx.parse_size("10GB") == 10_000_000_000
    for bad in ("MiB", "-1"):
        with pytest.raises(mqx.ConfigError, match="capacity"):
            mqx.parse_size(bad, "capacity")


@requires_daemon
@pytest.mark.parametrize(
    "variable, value",
    [
        ("MQX_DAEMON_FIX_N", "0"),
        ("MQX_DAEMON_ADMISSION", "lottery"),
        ("MQX_DAEMON_CAPACTIY", "1GiB"),
        ("MQX_CONFIG", "/"),  # a directory: was the defaults
        ("MQX_CONFIG", "/dev/zero"),  # was read without end
        ("MQX_DAEMON_CAPACITY", "9223372036854775807"),  # was quoted back as ...808
    ],
)
def test_the_message_is_the_one_mqxd_prints(variable, value):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MQX_")}
    environment[variable] = value
    daemon = subprocess.run([find_binary("mqxd")], env=environment, capture_output=True, text=True, timeout=10)
    assert daemon.returncode == 1
    with pytest.raises(mqx.ConfigError) as caught:
        mqx.load_config(environment={variable: value})
    assert daemon.stderr.strip() == f"mqxd: {caught.value}"
    assert variable in str(caught.value)


needs_plans = pytest.mark.skipif(not hasattr(mqx, "load_plan"), reason="plans need the daemon suite")


@needs_plans
def test_plan_demand_is_the_time_weighted_mean(tmp_path):
    # tests/daemon/admission_policy_test.cpp: (1*100 + 3*20) / 4 = 40 MiB; peak 100 MiB.
    plan = tmp_path / "q3.toml"
    plan.write_text(
        'name = "q3"\n[[operator]]\ntime = 1.0\nmemory = "100MiB"\n[[operator]]\ntime = 3.0\nmemory = 20971520\n'
    )
    assert mqx.load_plan(str(plan)) == ("q3", 40 << 20, 100 << 20)


@needs_plans
@pytest.mark.parametrize(
    "text",
    [
        'name = "x"\n',
        "[[operator]]\ntime = -1\nmemory = 1\n",
        "[[operator]]\ntime = 1\n",
        "[[operator]]\ntime = 1\nmemory = 1\nspeed = 2\n",
        "junk = 1\n[[operator]]\ntime = 1\nmemory = 1\n",
    ],
)
def test_bad_plans_are_config_errors(tmp_path, text):
    plan = tmp_path / "bad.toml"
    plan.write_text(text)
    with pytest.raises(mqx.ConfigError, match="bad.toml"):
        mqx.load_plan(str(plan))


def test_a_directory_or_device_as_the_file_is_an_error_naming_it(tmp_path):
    for key, load in (
        ("MQX_CONFIG", lambda path: mqx.load_config(environment={"MQX_CONFIG": path})),
        ("path", lambda path: mqx.load_config(path=path, environment={})),
    ):
        with pytest.raises(mqx.ConfigError, match=f"^mqx config: {key}: '{tmp_path}' is a directory"):
            load(str(tmp_path))
        with pytest.raises(mqx.ConfigError, match=f"^mqx config: {key}: '/dev/zero' is not a regular file"):
            load("/dev/zero")
    big = tmp_path / "big.toml"
    big.write_text("#" * (2 << 20))
    with pytest.raises(mqx.ConfigError, match="MQX_CONFIG: .*big.toml' is larger than 1024 KiB"):
        mqx.load_config(environment={"MQX_CONFIG": str(big)})


def test_values_are_quoted_back_exactly():
    with pytest.raises(mqx.ConfigError) as caught:
        mqx.load_config(environment={"MQX_DAEMON_CAPACITY": "9223372036854775807"})
    assert "MQX_DAEMON_CAPACITY: size '9223372036854775807' out of range" in str(caught.value)
    assert mqx.parse_size("9223372036854775807") == 9223372036854775807


def test_a_misspelled_variable_is_warned_about_once(tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MQX_")}
    environment.update({"MQX_DEAMON_CAPACITY": "abc", "MQX_BUILD_DIR": "build", "MQX_JOBS": "2"})
    python = subprocess.run(
        [sys.executable, "-c", "import mqx; mqx.load_config(); mqx.load_config(); print(mqx.load_config().capacity)"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert python.returncode == 0, python.stderr
    assert python.stdout.strip() == "0"  # ignored, and the rest loads
    lines = python.stderr.splitlines()
    assert len(lines) == 1, python.stderr
    assert "mqx config: MQX_DEAMON_CAPACITY: names no configuration key" in lines[0]
    assert "did you mean MQX_DAEMON_CAPACITY?" in lines[0]


@requires_daemon
def test_mqxd_warns_about_a_misspelled_variable(start_node):
    node = start_node(MQX_DEAMON_CAPACITY="abc")
    node.stop()
    assert node.log.count("MQX_DEAMON_CAPACITY") == 1, node.log


def test_load_config_after_numpy_parses_floats():
    """numpy loads the interpreter's C++ runtime first; a module that exported
    its own statically linked copy crashed here (toml++ parses floats through
    a stringstream): the H100 host's compiler links libstdc++ statically."""
    pytest.importorskip("numpy")
    code = (
        "import numpy, mqx\n"
        f"config = mqx.load_config(path={str(REPOSITORY / 'configs' / 'default.toml')!r}, environment={{}})\n"
        "print(config['policy.latency_factor'])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.strip()) >= 0
