import type { PolicyConfig, PolicyInput, PolicyName } from '../config/schema.js';
import { POLICY_NAMES, policySchema } from '../config/schema.js';
import { parseOrThrow } from '../config/validate.js';
import { UnknownPolicyError } from '../core/errors.js';
import { ExpectedWaitPolicy } from './expected-wait.js';
import { LeastLoadPolicy } from './least-load.js';
import { WEIGHTED_PRESETS, WeightedPolicy } from './weighted.js';
import { CacheAwarePolicy } from './cache-aware.js';
import { ConsistentHashingPolicy } from './consistent-hashing.js';
import { ManualPolicy } from './manual.js';
import { PrefixHashPolicy } from './prefix-hash.js';
import type { Policy, PolicyEnv } from './policy.js';
import { PowerOfTwoPolicy } from './power-of-two.js';
import { RandomPolicy } from './random.js';
import { RoundRobinPolicy } from './round-robin.js';

type Factory<N extends PolicyName> = (config: Extract<PolicyConfig, { name: N }>, env: PolicyEnv) => Policy;

// Typed as a total record: a name the schema accepts without a factory here fails to compile.
const FACTORIES: { [N in PolicyName]: Factory<N> } = {
  random: (_config, env) => new RandomPolicy(env),
  round_robin: () => new RoundRobinPolicy(),
  power_of_two: (_config, env) => new PowerOfTwoPolicy(env),
  least_load: (config, env) =>
    config.mode === 'expected_wait'
      ? new ExpectedWaitPolicy(
          {
            lambdaT: config.lambdaT,
            fallbackThroughput: config.fallbackThroughput,
            meanPromptTokens: config.meanPromptTokens,
            bodyAware: config.bodyAware,
          },
          env,
        )
      : new LeastLoadPolicy({ lambda: config.lambda }, env),
  weighted: (config, env) =>
    new WeightedPolicy(config.scorers ?? WEIGHTED_PRESETS[config.preset ?? 'gie'], env),
  consistent_hashing: (config, env) => new ConsistentHashingPolicy(config, env),
  manual: (config, env) => new ManualPolicy(config, env),
  prefix_hash: (config, env) => new PrefixHashPolicy(config, env),
  cache_aware: (config, env) => new CacheAwarePolicy(config, env),
};

export const DEFAULT_POLICY_ENV: PolicyEnv = {
  rng: Math.random,
  now: Date.now,
  staleAfterMs: 3000,
};

/** Builds a policy from its name or its config object (validated with the config schema). */
export function createPolicy(config: string | PolicyInput, env: Partial<PolicyEnv> = {}): Policy {
  const name = typeof config === 'string' ? config : (config as { name: string }).name;
  if (!(POLICY_NAMES as readonly string[]).includes(name)) throw new UnknownPolicyError(name, POLICY_NAMES);
  const parsed = parseOrThrow(policySchema, config, 'policy');
  const factory = FACTORIES[parsed.name] as Factory<PolicyName>;
  return factory(parsed, { ...DEFAULT_POLICY_ENV, ...env });
}

export { POLICY_NAMES };
