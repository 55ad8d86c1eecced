"""The torch engine (``engine: torch``): the packaged SmolLM2 GGUF in PyTorch, prompts in batches.

Oracles: transformers' own tokenizer built from the GGUF (a second implementation of the prompt's
token ids), and transformers' own greedy ``generate`` one prompt at a time (no batch, no padding,
its own cache and attention; our decoding loop shares only the layers' modules with it) with the
log-softmax of its first step's logits for ``top_logprobs``."""

import pytest

from rag.generation import GenerationRequest, LocalGeneratorConfig, TorchGenerator, build_generator
from rag.generation.config import parse_generator_config
from rag.errors import ConfigError
from rag.generation.torch_engine import batches

pytestmark = pytest.mark.slow

CONTEXTS = {
    "France": ["Paris is the capital and largest city of France.", "Berlin is the capital of Germany."],
    "Hamlet": ["Hamlet is a tragedy written by William Shakespeare around 1600."],
    "water": ["At sea level, water boils at 100 degrees Celsius."],
    "planet": ["Jupiter is the largest planet in the Solar System, a gas giant."],
}
QUESTIONS = {
    "France": "What is the capital of France?", "Hamlet": "Who wrote the play Hamlet?",
    "water": "At what temperature does water boil at sea level?",
    "planet": "What is the largest planet in the Solar System?",
}


def requests() -> list[GenerationRequest]:
    return [GenerationRequest(name, QUESTIONS[name], CONTEXTS[name]) for name in QUESTIONS] + [
        GenerationRequest("closed", "What is the capital of Italy?", [], closed_book=True)]


def config(**overrides) -> LocalGeneratorConfig:
    return LocalGeneratorConfig(engine="torch", max_tokens=10, n_threads=2, batch_size=2, **overrides)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """One loaded model for the module (loading dequantizes 135M weights)."""
    generator = build_generator(config(), tmp_path_factory.mktemp("load"))
    yield generator.engine()
    generator.close()


def generator_with(engine, cache_dir, **overrides) -> TorchGenerator:
    generator = build_generator(config(**overrides), cache_dir)
    generator._engine = engine  # the module's loaded model; everything else is the generator's own
    return generator


def greedy_by_transformers(engine, token_ids: list[int], n: int) -> tuple[list[int], object]:
    """The oracle: transformers' own greedy ``generate`` on this one prompt (no batch, no padding;
    its own key/value cache and attention), and the log-probabilities of its first token."""
    import torch

    with torch.inference_mode():
        out = engine.model.generate(
            input_ids=torch.tensor([token_ids]), attention_mask=torch.ones((1, len(token_ids)), dtype=torch.long),
            max_new_tokens=n, do_sample=False, temperature=None, top_p=None, top_k=None,
            eos_token_id=engine.stop_ids, pad_token_id=engine.pad_id, return_dict_in_generate=True, output_logits=True)
    generated = out.sequences[0, len(token_ids):].tolist()
    ends = [i for i, token in enumerate(generated) if token in engine.stop_ids]
    return generated[:ends[0]] if ends else generated, torch.log_softmax(out.logits[0][0].float(), dim=-1)


def test_prompt_tokens_equal_transformers_own_tokenizer_of_the_gguf(engine, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(engine.model_path.parent), gguf_file=engine.model_path.name)
    generator = build_generator(config(), tmp_path)
    for request in requests():
        messages = generator.prompts.build(request).messages
        expected = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        expected = expected["input_ids"] if isinstance(expected, dict) or hasattr(expected, "keys") else expected
        assert engine.tokens(messages) == list(expected)


def test_batched_answers_equal_transformers_greedy_generate_one_prompt_at_a_time(engine, tmp_path):
    generator = generator_with(engine, tmp_path)
    results = generator.generate(requests())
    assert generator.batches_run == 3  # 5 prompts in batches of 2
    for request, result in zip(requests(), results):
        tokens = engine.tokens(generator.prompts.build(request).messages)
        expected, _ = greedy_by_transformers(engine, tokens, 10)
        assert result.answer == engine.piece(expected).strip(), request.key
        assert (result.prompt_tokens, result.completion_tokens) == (len(tokens), len(expected))
        assert "<|im_end|>" not in result.answer
    assert "Paris" in results[0].answer and "Shakespeare" in results[1].answer
    assert any(r.completion_tokens < 10 for r in results)  # an answer that ended at its stop token


def test_first_token_alternatives_are_the_oracles_log_probabilities(engine, tmp_path):
    generator = generator_with(engine, tmp_path, top_logprobs=5)
    request = requests()[0]
    [result] = generator.generate([request])
    tokens = engine.tokens(generator.prompts.build(request).messages)
    expected, logprobs = greedy_by_transformers(engine, tokens, 1)
    alternatives = result.extra["top_logprobs"]
    assert len(alternatives) == 5 and max(alternatives, key=alternatives.get) == engine.piece(expected)
    import torch

    values, indices = torch.topk(logprobs, 5)
    for value, index in zip(values.tolist(), indices.tolist()):
        assert alternatives[engine.piece([index])] == pytest.approx(value, abs=1e-4)


def test_duplicates_cache_and_a_resumed_run_equal_an_uninterrupted_one(engine, tmp_path):
    doubled = requests() + [GenerationRequest("France-again", QUESTIONS["France"], CONTEXTS["France"])]
    fresh = generator_with(engine, tmp_path / "fresh").generate(doubled)
    assert fresh[-1].extra["deduplicated"] and fresh[-1].answer == fresh[0].answer

    class Interrupt(Exception):
        pass

    resumed = generator_with(engine, tmp_path / "resumed")

    def stop_in_the_second_batch(result):
        if resumed.batches_run == 2:  # its first answer is cached by now, its second is not
            raise Interrupt

    with pytest.raises(Interrupt):
        resumed.generate(doubled, on_result=stop_in_the_second_batch)
    again = generator_with(engine, tmp_path / "resumed")
    answers = again.generate(doubled)
    assert [r.answer for r in answers] == [r.answer for r in fresh]
    assert again.batches_run == 2  # the second batch again (for its uncached prompt), and the third
    cached = generator_with(engine, tmp_path / "fresh").generate(doubled)
    assert all(r.cached for r in cached) and [r.answer for r in cached] == [r.answer for r in fresh]


def test_a_failing_batch_fails_its_prompts_uncached_and_the_others_are_answered(engine, tmp_path):
    class Failing:
        """Fault injection: the real engine, except for batches holding the Hamlet prompt."""

        def __getattr__(self, name):
            return getattr(engine, name)

        def complete(self, prompts, max_tokens, top_logprobs=None):
            if any(engine.piece(p).count("Hamlet") for p in prompts):
                raise RuntimeError("out of memory in the matrix product")
            return engine.complete(prompts, max_tokens, top_logprobs)

    generator = generator_with(engine, tmp_path)
    generator._engine = Failing()
    results = generator.generate(requests())
    failed = {r.key for r in results if r.failed}
    assert "Hamlet" in failed and len(failed) < len(results)  # its batch only
    assert {r.error_kind for r in results if r.failed} == {"engine_error"}
    assert all(r.answer for r in results if r.key not in failed)
    generator._engine = engine
    again = generator.generate(requests())
    assert {r.key for r in again if not r.cached} == failed and not any(r.failed for r in again)


def test_batches_are_in_prefix_order_capped_and_the_same_for_the_same_keys():
    tokens = {"d": [1, 2, 3], "a": [1, 2], "c": [5], "b": [1, 2, 3, 4], "e": [0, 9, 9, 9, 9, 9]}
    assert batches(tokens, 2) == [["e", "a"], ["d", "b"], ["c"]]
    assert batches(dict(reversed(list(tokens.items()))), 2) == batches(tokens, 2)
    assert batches(tokens, 5, max_positions=12) == [["e", "a"], ["d", "b", "c"]]  # 3 x 6 > 12; 3 x 4 <= 12


def test_the_engine_is_a_config_key():
    assert parse_generator_config({"type": "local", "engine": "torch", "batch_size": 4}).engine == "torch"
    with pytest.raises(ConfigError, match="generator.engine"):
        parse_generator_config({"type": "local", "engine": "vllm"})
    with pytest.raises(ConfigError, match="generator.batch_size"):
        parse_generator_config({"type": "local", "batch_size": 0})


def test_a_prompt_longer_than_n_ctx_fails_as_llama_cpp_refuses_it_and_is_not_computed(engine, tmp_path):
    generator = generator_with(engine, tmp_path, n_ctx=256)
    long = GenerationRequest("long", "What is repeated?", ["The same sentence, again and again. " * 60])
    results = generator.generate([long, requests()[0]])
    assert results[0].failed and results[0].error_kind == "client_error" and "n_ctx 256" in results[0].error_message
    assert "Paris" in results[1].answer and generator.batches_run == 1


def test_the_weights_read_from_the_gguf_predict_as_llama_cpp_does(engine):
    """Oracle: llama.cpp's own reading of the same file. Its metadata equals ours; over every position
    of a real prompt its next-token prediction agrees with ours (its arithmetic rounds activations to
    8 bits, so not every logit is equal; a misplaced tensor or query/key rows left in llama.cpp's
    order would predict nonsense)."""
    import torch
    from llama_cpp import Llama

    from rag.generation.gguf_weights import GGUFFile

    ours = GGUFFile(engine.model_path).metadata
    for key, value in engine.vocab.metadata.items():
        if isinstance(ours.get(key), (int, float)) and not isinstance(ours.get(key), bool):
            assert float(value) == pytest.approx(ours[key]), key
    llm = Llama(str(engine.model_path), n_ctx=512, logits_all=True, verbose=False, n_threads=2)
    tokens = engine.tokens([{"role": "user", "content": CONTEXTS["France"][0] + " " + QUESTIONS["France"]}])
    llm.eval(tokens)
    theirs = torch.tensor(llm.scores[:len(tokens)])
    with torch.inference_mode():
        logits = engine.model(input_ids=torch.tensor([tokens])).logits[0]
    agree = (logits.argmax(-1) == theirs.argmax(-1)).float().mean().item()
    assert agree >= 0.9 and (logits - theirs).abs().mean().item() < 0.5
