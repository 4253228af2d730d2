import { DuplicateWorkerError } from './errors.js';
import { Worker, type WorkerSpec } from './worker.js';

/**
 * The set of workers. `candidates()` is on every pick's path, so it returns a cached array that
 * is rebuilt only when membership or eligibility changes, never allocated per pick.
 */
export class WorkerPool {
  readonly #workers = new Map<string, Worker>();
  readonly #removeListeners = new Set<(worker: Worker) => void>();
  #candidates: Worker[] | undefined;
  /** Healthy candidates per model, rebuilt with `#candidates`. */
  readonly #byModel = new Map<string, Worker[]>();
  readonly #invalidate = (): void => {
    this.#candidates = undefined;
    this.#byModel.clear();
  };

  add(spec: WorkerSpec | string | Worker): Worker {
    const worker = spec instanceof Worker ? spec : new Worker(spec);
    if (this.#workers.has(worker.id)) throw new DuplicateWorkerError(worker.id);
    this.#workers.set(worker.id, worker);
    worker.watch(this.#invalidate);
    this.#invalidate();
    return worker;
  }

  /** Removes the worker and tells every listener (policies, poller, metrics) to drop its state. */
  remove(id: string): Worker | undefined {
    const worker = this.#workers.get(id);
    if (!worker) return undefined;
    this.#workers.delete(id);
    worker.watch(undefined);
    this.#invalidate();
    for (const listener of this.#removeListeners) listener(worker);
    return worker;
  }

  onRemove(listener: (worker: Worker) => void): () => void {
    this.#removeListeners.add(listener);
    return () => this.#removeListeners.delete(listener);
  }

  get(id: string): Worker | undefined {
    return this.#workers.get(id);
  }

  has(id: string): boolean {
    return this.#workers.has(id);
  }

  get size(): number {
    return this.#workers.size;
  }

  list(): Worker[] {
    return [...this.#workers.values()];
  }

  /** True once any worker declares the models it serves: requests are then routed per model. */
  get modelAware(): boolean {
    for (const w of this.#workers.values()) if (w.models.length > 0) return true;
    return false;
  }

  /** Whether any worker, healthy or not, serves `model` (a worker that lists no models serves all). */
  serves(model: string): boolean {
    for (const w of this.#workers.values())
      if (w.models.length === 0 || w.models.includes(model)) return true;
    return false;
  }

  /** The candidates that serve `model`; cached until membership or eligibility changes. */
  candidatesFor(model: string): readonly Worker[] {
    const all = this.candidates();
    let list = this.#byModel.get(model);
    if (list === undefined) {
      list = all.filter((w) => w.models.length === 0 || w.models.includes(model));
      this.#byModel.set(model, list);
    }
    return list;
  }

  /** Healthy, non-draining workers. Callers must not mutate the returned array. */
  candidates(): readonly Worker[] {
    if (!this.#candidates) {
      this.#candidates = [];
      for (const w of this.#workers.values()) if (w.healthy && !w.draining) this.#candidates.push(w);
    }
    return this.#candidates;
  }
}
