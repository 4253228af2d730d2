import type { Worker } from '../../core/worker.js';
import type { RequestContext } from '../policy.js';
import { RadixTree } from '../radix-tree.js';
import type { Scorer } from './scorer.js';

export const PREFIX_SCORER = 'prefix';

export interface PrefixScorerOptions {
  /** Prompt characters remembered per worker over all models, LRU-evicted (default 2,000,000). */
  maxCharsPerWorker: number;
}

/**
 * The Gateway API Inference Extension's prefix-cache scorer on our radix tree: the fraction of the
 * prompt each candidate was already sent under the request's model, 0..1 (0 without a prompt). It
 * learns only through onPick, which the weighted policy must call with its winner, so the tree
 * reflects where requests actually went.
 */
export class PrefixScorer implements Scorer {
  readonly name = PREFIX_SCORER;
  readonly tree: RadixTree;

  constructor(options: PrefixScorerOptions) {
    this.tree = new RadixTree(options);
  }

  score(candidates: readonly Worker[], ctx: RequestContext, out: Float64Array): void {
    const prompt = ctx.prompt;
    const n = candidates.length;
    if (!prompt) {
      out.fill(0, 0, n);
      return;
    }
    this.tree.matchCandidates(ctx.model ?? '', prompt, candidates, out);
    for (let i = 0; i < n; i++) out[i] = (out[i] as number) / prompt.length;
  }

  /** Remembers that `worker` was sent this request's prompt. */
  onPick(worker: Worker, ctx: RequestContext): void {
    if (ctx.prompt) this.tree.insert(ctx.model ?? '', ctx.prompt, worker.id);
  }

  onRemove(workerId: string): void {
    this.tree.removeWorker(workerId);
  }
}
