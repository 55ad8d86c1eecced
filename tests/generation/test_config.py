import pytest

from rag.errors import ConfigError
from rag.generation import (
    ExtractiveGeneratorConfig,
    LocalGeneratorConfig,
    OpenAIGeneratorConfig,
    parse_generator_config,
)


def test_each_type_parses_to_its_model():
    assert isinstance(parse_generator_config({"type": "openai", "model": "gpt-4o-mini"}), OpenAIGeneratorConfig)
    local = parse_generator_config({"type": "local"})
    assert isinstance(local, LocalGeneratorConfig)
    assert local.concurrency == 1 and local.port is None
    assert isinstance(parse_generator_config({"type": "extractive"}), ExtractiveGeneratorConfig)


@pytest.mark.parametrize(
    ("data", "key", "expectation"),
    [
        ({"type": "openai", "model": "m", "api_key": "sk-x"}, "generator.api_key", "unknown key; expected one of: api_key_env"),
        ({"type": "openai", "model": "m", "concurrency": 0}, "generator.concurrency", "greater than 0"),
        ({"type": "openai", "model": "m", "temperature": "hot"}, "generator.temperature", "valid number"),
        ({"type": "openai"}, "generator.model", "missing required key"),
        ({"type": "openai", "model": "m", "concurrency": True}, "generator.concurrency", "not a boolean"),
        ({"type": "openai", "model": "m", "base_url": "localhost:8000/v1"}, "generator.base_url", "http(s) URL"),
        ({"type": "local", "backoff": {"initial_s": -1}}, "generator.backoff.initial_s", "greater than 0"),
        ({"type": "gpt"}, "generator", "'openai', 'local', 'extractive'"),
        ({"type": "openai", "model": "m", "user_prompt": "{question} only"}, "generator.user_prompt", "{context}"),
        ({"type": "openai", "model": "m", "user_prompt": "{question} {context} {answer}"},
         "generator.user_prompt", "unknown placeholder"),
        ({"type": "openai", "model": "m", "user_prompt": "{question {context}"}, "generator.user_prompt",
         "not a valid format template"),
    ],
)
def test_bad_config_names_the_key_and_the_expectation(data, key, expectation):
    with pytest.raises(ConfigError) as info:
        parse_generator_config(data, source="bench.yaml")
    message = str(info.value)
    assert message.startswith(f"bench.yaml: {key}: ")
    assert expectation in message


def test_the_api_key_cannot_be_written_in_the_config():
    assert "api_key" not in OpenAIGeneratorConfig.model_fields
    assert OpenAIGeneratorConfig(model="m").api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("pasted", ["sk-proj-4f8a9b2c7d1e6f3a", "Bearer abc.def", "openai_api_key", "9ABCDEF"])
def test_a_key_pasted_as_api_key_env_is_refused_without_echo(pasted):
    with pytest.raises(ConfigError) as info:
        parse_generator_config({"type": "openai", "model": "m", "api_key_env": pasted}, source="bench.yaml")
    message = str(info.value)
    assert message.startswith("bench.yaml: generator.api_key_env: expected the name of the environment variable")
    assert pasted not in message and "not shown" in message
