"""BoT-GRPO inside SkyRL (skyrl 0.3.0): the estimators in SkyRL's registry, and the reward
server's per-token scores as the rewards of SkyRL's generator output.

SkyRL takes token-level rewards natively: a generator's ``rewards`` may be ``List[List[float]]``,
one score per response token, which SkyRL pads into the ``(bs, T)`` rewards its advantage step
hands the registered estimator. So nothing in SkyRL is overridden:

* :func:`register` adds ``bot_grpo`` (the bounded form, as ``botgrpo train``, TRL and verl use it)
  and ``bot_grpo_paper`` (the paper's exactly) to SkyRL's ``AdvantageEstimatorRegistry``. Their
  options come from the algorithm config's ``bot_grpo`` section
  (``trainer.algorithm.bot_grpo.min_std=0.25``, :class:`BoTGRPOAlgorithmConfig`), or are bound
  at registration;
* :class:`TokenRewardGenerator` wraps any SkyRL generator (SkyRL's own, or yours): after it
  generates, each response goes to the reward server with its tokens' character spans
  (:class:`RewardServerTokens`), and the output's ``rewards`` become the server's token scores,
  one per response token, in the recipe's units;
* :func:`main` is an entrypoint for SkyRL's own launcher, which hands ``main()`` of the module
  named by ``trainer.override_entrypoint`` the command line::

      python -m skyrl.train.entrypoints.main_base \\
          trainer.override_entrypoint=botgrpo.trainer.integrations.skyrl \\
          trainer.algorithm.advantage_estimator=bot_grpo \\
          generator.botgrpo.url=http://reward-server:8000 generator.botgrpo.task=math ...

  It parses SkyRL's config extended by :data:`BoTGRPOSkyRLConfig`, registers both estimators
  (before Ray starts, so SkyRL's registry actor carries them to every worker) and runs SkyRL's
  experiment with its generator wrapped.

Each rollout's reference is ``env_extras[i]["reference"]`` when that is a dict, else the
ground truth of SkyRL's ``reward_spec`` (``{"answer": ...}`` for a plain value). Rollouts of one
prompt (one ``trajectory_ids[i].instance_id``) are sent as one group. A rollout the server
cannot score gets NaN token rewards: the estimator leaves it out of its group's statistics and
gives it advantage 0 (SkyRL's ``reward/avg_raw_reward`` for that step is then NaN; the share of
unscored rollouts is logged as ``botgrpo/unscored``).

Scope: one response per prompt row (SkyRL's default). Step-wise trajectories are refused, and
in multi-turn responses the environment's tokens are scored as part of the text (they carry
loss mask 0, but SkyRL's estimators see every response token).
"""

import functools
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import ray
import torch
from skyrl.backends.skyrl_train.utils.ppo_utils import AdvantageEstimatorRegistry
from skyrl.train.config import AlgorithmConfig, BaseConfig, GeneratorConfig, make_config
from skyrl.train.generators.base import GeneratorInput, GeneratorInterface, GeneratorOutput

from botgrpo.services.client import AsyncRewardClient
from botgrpo.services.schemas import Result
from botgrpo.trainer.integrations.contract import (DEFAULT_NAME, NAMES, OPTIONS_KEY, checked_options,
                                                   reference_of, uid_group_advantages)
from botgrpo.trainer.rollout.alignment import token_spans

OVERRIDE_ARG = "trainer.override_entrypoint="


# --------------------------------------------------------------------------- config
@dataclass
class BoTGRPOAlgorithmConfig(AlgorithmConfig):
    bot_grpo: dict[str, Any] = field(default_factory=dict)
    """The estimator's options (``eps``, ``use_reward_to_go``, ``min_std``), e.g.
    ``trainer.algorithm.bot_grpo.min_std=0.25``; unknown names are refused."""


@dataclass
class RewardServerConfig(BaseConfig):
    url: Optional[str] = None
    task: Optional[str] = None
    api_key: Optional[str] = None
    options: dict[str, Any] = field(default_factory=dict)
    """The task's scorer options (``GET /v1/scorers``), e.g. ``{"level": "build"}`` for react."""


@dataclass
class BoTGRPOGeneratorConfig(GeneratorConfig):
    botgrpo: RewardServerConfig = field(default_factory=RewardServerConfig)
    """The reward server whose token scores become the rollouts' rewards (``generator.botgrpo.url``...)."""


BoTGRPOSkyRLConfig = make_config(algorithm_cls=BoTGRPOAlgorithmConfig, generator_cls=BoTGRPOGeneratorConfig)


# --------------------------------------------------------------------------- estimators
def bot_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                       index: Optional[Sequence[str]] = None, config: Any = None, *,
                       estimator: str = DEFAULT_NAME, options: Optional[dict[str, Any]] = None,
                       **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """SkyRL estimator: BoT-GRPO advantages, returned as both ``advantages`` and ``returns``.

    SkyRL (``ppo_utils.compute_advantages_and_returns``) passes ``index`` as the rows' prompt
    uids and ``config`` as ``trainer.algorithm``; the options are that config's ``bot_grpo``
    section (when it has one) overridden by ``options`` (bound by :func:`register`). SkyRL's
    other keywords (``gamma``, ``lambd``, ``grpo_norm_by_std``, ``values``) do not apply.
    """
    section = getattr(config, OPTIONS_KEY, None)
    options = {**checked_options(section, estimator, f"trainer.algorithm.{OPTIONS_KEY}"), **(options or {})}
    return uid_group_advantages(token_level_rewards, response_mask, index, estimator, options)


def register(name: str = DEFAULT_NAME, **options: Any) -> Callable:
    """Register the estimator ``name`` (``bot_grpo`` or ``bot_grpo_paper``) in SkyRL's
    ``AdvantageEstimatorRegistry``; returns the registered function.

    Call it before ``ray.init`` (SkyRL's ``initialize_ray`` then copies the registry to the
    actor its workers read), or after it (the registry syncs at once). ``options`` are bound
    over the config's. Registering the same name and options again is a no-op; other options
    under a taken name raise SkyRL's ``ValueError``.
    """
    if name not in NAMES:
        raise ValueError(f"no BoT-GRPO estimator {name!r}; choose one of {list(NAMES)}")
    fn = functools.partial(bot_grpo_advantage, estimator=name, options=dict(options))
    if name in AdvantageEstimatorRegistry.list_available() and _same(AdvantageEstimatorRegistry.get(name), fn):
        return fn
    AdvantageEstimatorRegistry.register(name, fn)
    return fn


def _same(registered: Any, fn: functools.partial) -> bool:
    """Whether ``registered`` is ``fn`` again: a copy through SkyRL's registry actor is a new object."""
    return (isinstance(registered, functools.partial) and registered.func is fn.func
            and registered.keywords == fn.keywords)


# --------------------------------------------------------------------------- token rewards
class RewardServerTokens:
    """Token rewards for SkyRL responses from a BoT-GRPO reward server.

    ``await tokens(response_ids, references, groups=..., stop_reasons=...)`` returns one list
    per response with one reward per response token (:func:`token_rewards` of
    :meth:`score`'s results).
    """

    def __init__(self, tokenizer, url: str, task: str, *, options: Optional[dict[str, Any]] = None,
                 api_key: Optional[str] = None):
        self.tokenizer, self.url, self.task = tokenizer, url, task
        self.options, self.api_key = dict(options or {}), api_key

    async def score(self, response_ids: Sequence[Sequence[int]], references: Sequence[Optional[dict]], *,
                    groups: Optional[Sequence[str]] = None,
                    stop_reasons: Optional[Sequence[Optional[str]]] = None) -> list[Result]:
        """The server's result for each response, sent with its tokens' character spans."""
        rollouts = []
        for i, (ids, reference) in enumerate(zip(response_ids, references, strict=True)):
            text, spans = token_spans(self.tokenizer, list(ids))
            reason = stop_reasons[i] if stop_reasons else None
            rollouts.append({"id": str(i), "group": groups[i] if groups else None, "completion": text,
                             "token_offsets": [list(s) for s in spans], "reference": reference,
                             "finish_reason": None if reason is None else "length" if reason == "length" else "stop"})
        # a client per call: SkyRL may generate in a different event loop each step
        async with AsyncRewardClient(self.url, api_key=self.api_key) as client:
            return await client.score(self.task, rollouts, self.options)

    async def __call__(self, response_ids: Sequence[Sequence[int]], references: Sequence[Optional[dict]],
                       **kwargs: Any) -> list[list[float]]:
        return token_rewards(await self.score(response_ids, references, **kwargs), response_ids)


def token_rewards(results: Sequence[Result], response_ids: Sequence[Sequence[int]]) -> list[list[float]]:
    """One row per response: the server's token scores in the recipe's units (``Result.rewards()``,
    one per token: the spans sent made them so), NaN throughout where the server could not score."""
    return [r.rewards() if r.ok else [math.nan] * len(ids) for r, ids in zip(results, response_ids, strict=True)]


class TokenRewardGenerator(GeneratorInterface):
    """A SkyRL generator: ``generator``'s rollouts, rewarded per token by the reward server.

    ``rewards`` in the output become ``List[List[float]]`` (:func:`token_rewards`); the rest of
    ``generator``'s output is kept, its rollout metrics gain ``botgrpo/score_mean`` (the server's
    outcome over scored rollouts) and ``botgrpo/unscored`` (the share it could not score).
    """

    def __init__(self, generator: GeneratorInterface, tokens: RewardServerTokens):
        self.generator, self.tokens = generator, tokens

    async def generate(self, input_batch: GeneratorInput, **kwargs: Any) -> GeneratorOutput:
        output = await self.generator.generate(input_batch, **kwargs)
        responses = output["response_ids"]
        if output.get("is_last_step") is not None or len(responses) != len(input_batch["prompts"]):
            raise ValueError("TokenRewardGenerator scores one response per prompt row; step-wise "
                             f"trajectories are not supported ({len(responses)} responses, "
                             f"{len(input_batch['prompts'])} prompts)")
        extras = input_batch.get("env_extras") or [None] * len(responses)
        references = [reference_of((e or {}).get("reward_spec"), e) for e in extras]
        ids = input_batch.get("trajectory_ids")
        groups = [t.instance_id for t in ids] if ids else None
        results = await self.tokens.score(responses, references, groups=groups, stop_reasons=output.get("stop_reasons"))
        output["rewards"] = token_rewards(results, responses)
        scores = [r.score for r in results if r.ok]
        output["rollout_metrics"] = {**(output.get("rollout_metrics") or {}),
                                     "botgrpo/score_mean": sum(scores) / len(scores) if scores else math.nan,
                                     "botgrpo/unscored": 1 - len(scores) / len(responses)}
        return output


# --------------------------------------------------------------------------- entrypoint
def reward_server(cfg) -> RewardServerConfig:
    """``generator.botgrpo``, checked: the server's url and task are required."""
    server = cfg.generator.botgrpo
    if not server.url or not server.task:
        raise ValueError("set generator.botgrpo.url and generator.botgrpo.task (the reward server and its task)")
    return server


def reward_server_tokens(cfg, tokenizer) -> RewardServerTokens:
    """:class:`RewardServerTokens` for the server in ``generator.botgrpo``."""
    server = reward_server(cfg)
    return RewardServerTokens(tokenizer, server.url, server.task, options=server.options, api_key=server.api_key)


def parse(argv: Sequence[str]):
    """SkyRL's config, extended by ``trainer.algorithm.bot_grpo`` and ``generator.botgrpo``, from
    the launcher's arguments (less ``trainer.override_entrypoint``, which is no config field)."""
    return BoTGRPOSkyRLConfig.from_cli_overrides([a for a in argv if not a.startswith(OVERRIDE_ARG)])


@functools.cache
def experiment_class():
    """SkyRL's ``BasePPOExp`` with its generator wrapped in :class:`TokenRewardGenerator`."""
    from skyrl.train.entrypoints.main_base import BasePPOExp  # the launcher's module: Ray, datasets, vLLM client

    class BoTGRPOExp(BasePPOExp):
        def get_generator(self, cfg, tokenizer, inference_engine_client):
            inner = super().get_generator(cfg, tokenizer, inference_engine_client)
            return TokenRewardGenerator(inner, reward_server_tokens(cfg, tokenizer))

    return BoTGRPOExp


@ray.remote(num_cpus=1)
def _run(cfg) -> None:
    experiment_class()(cfg).run()  # the estimators reach this process through SkyRL's registry actor


def main(argv: Optional[Sequence[str]] = None) -> None:
    """SkyRL's launcher, with BoT-GRPO's estimators and token rewards (see the module docstring)."""
    from skyrl.train.utils.utils import initialize_ray, validate_cfg

    cfg = parse(sys.argv[1:] if argv is None else argv)
    reward_server(cfg)  # fail before Ray starts
    for name in NAMES:
        register(name)
    validate_cfg(cfg)  # checks trainer.algorithm.advantage_estimator against the registry
    initialize_ray(cfg)
    ray.get(_run.remote(cfg))
