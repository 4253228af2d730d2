import type { Worker } from '../core/worker.js';

export interface RadixTreeOptions {
  /** Most prompt characters remembered per worker, over all models; least recently used go first. */
  maxCharsPerWorker: number;
}

/** One worker's share of the tree: its node ownerships as an LRU list (head = least recently used). */
class Tenant {
  readonly id: string;
  chars = 0;
  head: Link | undefined = undefined;
  tail: Link | undefined = undefined;
  /** Scratch for matchCandidates: the match generation and the matched length it found. */
  mark = 0;
  matched = 0;

  constructor(id: string) {
    this.id = id;
  }
}

/** "tenant has seen the whole path down to node": one entry in the tenant's LRU list. */
class Link {
  readonly node: TreeNode;
  readonly tenant: Tenant;
  prev: Link | undefined = undefined;
  next: Link | undefined = undefined;

  constructor(node: TreeNode, tenant: Tenant) {
    this.node = node;
    this.tenant = tenant;
  }
}

class TreeNode {
  /** Characters from the parent to here; never empty below a root. */
  edge: string;
  /**
   * edge[0]'s code unit and edge.length, kept on the node so that evicting an old, cold node does
   * not also have to fault in its string.
   */
  key: number;
  size: number;
  parent: TreeNode | undefined;
  /** Keyed by the child edge's first UTF-16 code unit; undefined for a leaf to save a Map per leaf. */
  children: Map<number, TreeNode> | undefined = undefined;
  /**
   * The workers that have seen the whole path to here: the first inline, since most nodes have one
   * owner and a Map per node would double the node's memory and the cold lines an eviction touches;
   * further owners by tenant. `link` is undefined only when `more` is too (see removeOwner).
   */
  link: Link | undefined = undefined;
  more: Map<Tenant, Link> | undefined = undefined;

  constructor(edge: string, parent: TreeNode | undefined) {
    this.edge = edge;
    this.key = edge.length > 0 ? edge.charCodeAt(0) : -1;
    this.size = edge.length;
    this.parent = parent;
  }
}

class Root extends TreeNode {
  readonly model: string;

  constructor(model: string) {
    super('', undefined);
    this.model = model;
  }
}

/** Below this length V8 copies on slice anyway (SlicedString::kMinLength). */
const MIN_SLICE = 13;

/**
 * A copy of `s` that does not keep the string it was sliced from alive. V8 represents a long slice
 * as a view on its parent, so an edge sliced from a 100 KB prompt would pin all of it and the
 * per-worker character budget would bound nothing; slicing a fresh concatenation makes V8 flatten
 * into a string of just this length first.
 */
function detach(s: string): string {
  return s.length < MIN_SLICE ? s : (' ' + s).slice(1);
}

/**
 * An approximate radix tree per model of the prompts this router sent to each worker, in the style
 * of SGLang's cache-aware router: "approximate" because it records what was routed, not what the
 * engine actually still holds in its KV cache.
 *
 * Edges are compressed strings; each node lists the workers (tenants) that have seen the whole path
 * to it. Ownership is prefix-closed (whoever owns a node owns its ancestors), so the workers whose
 * longest match is at least L are exactly the owners of the node at depth L. Insert, match and split
 * are O(prompt length) character comparisons plus O(owners) per node on the path.
 *
 * Memory: each worker is charged the edge lengths of the nodes it owns, across all models, and never
 * more than `maxCharsPerWorker` after an insert (a prompt is remembered up to that length). Its
 * ownerships form an LRU list touched leaf-first on every insert, so a node always sits after all of
 * its owned descendants: evicting from the head therefore removes leaves first, keeps ownership
 * prefix-closed, and never touches another worker's entries. A node nobody owns has no children and
 * is unlinked at once; an empty model tree is dropped. The tree's characters are thus bounded by the
 * sum of the budgets (at most about twice that in memory, as a split keeps the tail's original string).
 */
export class RadixTree {
  readonly maxCharsPerWorker: number;
  readonly #roots = new Map<string, Root>();
  readonly #tenants = new Map<string, Tenant>();
  readonly #path: TreeNode[] = [];
  #nodes = 0;
  #generation = 0;

  constructor(options: RadixTreeOptions) {
    const max = options.maxCharsPerWorker;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`maxCharsPerWorker must be a positive integer, got ${max}`);
    }
    this.maxCharsPerWorker = max;
  }

  /** Nodes below the roots, over all models. */
  get nodeCount(): number {
    return this.#nodes;
  }

  get modelCount(): number {
    return this.#roots.size;
  }

  get workerCount(): number {
    return this.#tenants.size;
  }

  /** Characters charged to `workerId` (0 when unknown). */
  charsOf(workerId: string): number {
    return this.#tenants.get(workerId)?.chars ?? 0;
  }

  /** Records that `workerId` was sent `text` (up to maxCharsPerWorker chars) under `model`. */
  insert(model: string, text: string, workerId: string): void {
    const end = Math.min(text.length, this.maxCharsPerWorker);
    if (end === 0) return;
    let tenant = this.#tenants.get(workerId);
    if (tenant === undefined) {
      tenant = new Tenant(workerId);
      this.#tenants.set(workerId, tenant);
    }
    let root = this.#roots.get(model);
    if (root === undefined) {
      root = new Root(model);
      this.#roots.set(model, root);
    }
    const path = this.#path;
    path.length = 0;
    let node: TreeNode = root;
    let i = 0;
    while (i < end) {
      const first = text.charCodeAt(i);
      let child = node.children?.get(first);
      if (child === undefined) {
        child = new TreeNode(detach(text.slice(i, end)), node);
        (node.children ??= new Map()).set(first, child);
        this.#nodes += 1;
        path.push(child);
        break;
      }
      const matched = commonPrefix(child.edge, text, i, end);
      if (matched < child.edge.length) child = this.#split(child, matched);
      path.push(child);
      node = child;
      i += matched;
    }
    // Leaf first, so every ancestor ends up more recent than its descendants (see the class comment).
    for (let k = path.length - 1; k >= 0; k--) touch(path[k] as TreeNode, tenant);
    path.length = 0;
    while (tenant.chars > this.maxCharsPerWorker && tenant.head !== undefined) this.#evict(tenant.head);
  }

  /**
   * Writes into out[i] how many leading characters of `text` candidates[i] has been sent under
   * `model` (0 if none) and returns the largest of them.
   */
  matchCandidates(model: string, text: string, candidates: readonly Worker[], out: Float64Array): number {
    const n = candidates.length;
    out.fill(0, 0, n);
    const root = this.#roots.get(model);
    if (root === undefined || text.length === 0) return 0;
    const generation = ++this.#generation;
    let node: TreeNode = root;
    let i = 0;
    while (i < text.length) {
      const child: TreeNode | undefined = node.children?.get(text.charCodeAt(i));
      if (child === undefined) break;
      const matched = commonPrefix(child.edge, text, i, text.length);
      i += matched;
      // Deeper nodes come later and overwrite, leaving each owner's longest match.
      const first = child.link as Link;
      first.tenant.mark = generation;
      first.tenant.matched = i;
      if (child.more !== undefined) {
        for (const tenant of child.more.keys()) {
          tenant.mark = generation;
          tenant.matched = i;
        }
      }
      if (matched < child.edge.length) break;
      node = child;
    }
    let best = 0;
    for (let k = 0; k < n; k++) {
      const tenant = this.#tenants.get((candidates[k] as Worker).id);
      if (tenant !== undefined && tenant.mark === generation) {
        out[k] = tenant.matched;
        if (tenant.matched > best) best = tenant.matched;
      }
    }
    return best;
  }

  /** How many leading characters of `text` `workerId` has been sent under `model`. */
  matchedChars(model: string, text: string, workerId: string): number {
    const tenant = this.#tenants.get(workerId);
    let node: TreeNode | undefined = this.#roots.get(model);
    if (tenant === undefined || node === undefined) return 0;
    let i = 0;
    while (i < text.length) {
      const child: TreeNode | undefined = node.children?.get(text.charCodeAt(i));
      if (child === undefined || ownerLink(child, tenant) === undefined) break;
      const matched = commonPrefix(child.edge, text, i, text.length);
      i += matched;
      if (matched < child.edge.length) break;
      node = child;
    }
    return i;
  }

  /** Forgets everything `workerId` was sent, in every model. */
  removeWorker(workerId: string): void {
    const tenant = this.#tenants.get(workerId);
    if (tenant === undefined) return;
    while (tenant.head !== undefined) this.#evict(tenant.head);
    this.#tenants.delete(workerId);
  }

  /** Splits `node`'s edge after `at` chars; the new upper node takes the same owners and LRU slots. */
  #split(node: TreeNode, at: number): TreeNode {
    const parent = node.parent as TreeNode;
    const edge = node.edge;
    const upper = new TreeNode(detach(edge.slice(0, at)), parent);
    // The tail keeps viewing the string it was cut from; the upper copies live at least as long as
    // it does, so this at most doubles the characters held, without a copy of the (maybe long) tail.
    node.edge = edge.slice(at);
    node.key = node.edge.charCodeAt(0);
    node.size = node.edge.length;
    node.parent = upper;
    upper.children = new Map([[node.key, node]]);
    (parent.children as Map<number, TreeNode>).set(upper.key, upper);
    this.#nodes += 1;
    for (const link of owners(node)) {
      const upperLink = new Link(upper, link.tenant);
      addOwner(upper, upperLink);
      insertAfter(link, upperLink);
    }
    return upper;
  }

  /** Drops one ownership (an LRU head, hence a leaf for its tenant) and any node left unowned. */
  #evict(link: Link): void {
    const { node, tenant } = link;
    unlink(link);
    removeOwner(node, link);
    tenant.chars -= node.size;
    if (node.link !== undefined) return;
    // Prefix-closure: nobody owns it, so nobody owns a child, and unowned children were already unlinked.
    const parent = node.parent as TreeNode;
    const siblings = parent.children as Map<number, TreeNode>;
    siblings.delete(node.key);
    node.parent = undefined;
    this.#nodes -= 1;
    if (siblings.size === 0) {
      parent.children = undefined;
      if (parent instanceof Root) this.#roots.delete(parent.model);
    }
  }

  /**
   * Checks every structural invariant and throws on the first broken one. O(tree size): for tests
   * and debugging, never on the request path.
   */
  verify(): void {
    const charge = new Map<Tenant, number>();
    const owned = new Map<Tenant, number>();
    let nodes = 0;
    const stack: TreeNode[] = [...this.#roots.values()];
    for (const root of this.#roots.values()) {
      if (root.children === undefined) fail(`model ${root.model} has an empty tree`);
    }
    while (stack.length > 0) {
      const node = stack.pop() as TreeNode;
      if (node.children === undefined) continue;
      if (node.children.size === 0) fail('an empty children map was kept');
      for (const [first, child] of node.children) {
        nodes += 1;
        if (child.edge.length === 0 || child.edge.charCodeAt(0) !== first || child.key !== first) {
          fail('child keyed wrongly');
        }
        if (child.size !== child.edge.length) fail('stale edge size');
        if (child.parent !== node) fail('broken parent link');
        if (child.link === undefined) fail('unowned node kept');
        if (child.more?.size === 0) fail('an empty owner map was kept');
        for (const link of owners(child)) {
          const tenant = link.tenant;
          if (link.node !== child || ownerLink(child, tenant) !== link) fail('owner link mismatch');
          if (!(node instanceof Root) && ownerLink(node, tenant) === undefined) {
            fail(`${tenant.id} owns a node, not its parent`);
          }
          charge.set(tenant, (charge.get(tenant) ?? 0) + child.edge.length);
          owned.set(tenant, (owned.get(tenant) ?? 0) + 1);
        }
        stack.push(child);
      }
    }
    if (nodes !== this.#nodes) fail(`node count ${this.#nodes}, found ${nodes}`);
    for (const tenant of this.#tenants.values()) {
      if ((charge.get(tenant) ?? 0) !== tenant.chars) fail(`${tenant.id} charged ${tenant.chars} chars`);
      if (tenant.chars > this.maxCharsPerWorker) fail(`${tenant.id} over budget: ${tenant.chars}`);
      const position = new Map<TreeNode, number>();
      let k = 0;
      for (let link = tenant.head; link !== undefined; link = link.next) {
        if (link.next !== undefined && link.next.prev !== link) fail('broken LRU list');
        if (ownerLink(link.node, tenant) !== link) fail('LRU entry for a node it does not own');
        position.set(link.node, k++);
      }
      if (position.size !== k || k !== (owned.get(tenant) ?? 0))
        fail(`${tenant.id} LRU list has ${k} entries`);
      for (const [node, p] of position) {
        const parent = node.parent as TreeNode;
        if (!(parent instanceof Root) && (position.get(parent) ?? -1) <= p)
          fail('ancestor before descendant in LRU');
      }
    }
    for (const tenant of charge.keys()) if (this.#tenants.get(tenant.id) !== tenant) fail('unknown owner');
  }
}

/** Characters compared per slice while looking for where a prompt leaves an edge. */
const CHUNK = 64;

/**
 * Length of the common prefix of `edge` and text[from, end). The caller matched edge[0] already.
 * Slices compared with === run as a native memory compare (a slice is O(1) in V8), 10 to 50 times
 * faster than charCodeAt loops or startsWith, which walk the characters one builtin step at a time.
 */
function commonPrefix(edge: string, text: string, from: number, end: number): number {
  const limit = Math.min(edge.length, end - from);
  // A whole-edge match is the common case on shared prefixes.
  if (limit === edge.length && text.slice(from, from + limit) === edge) return limit;
  let j = 1;
  while (j + CHUNK <= limit && text.slice(from + j, from + j + CHUNK) === edge.slice(j, j + CHUNK))
    j += CHUNK;
  while (j < limit && edge.charCodeAt(j) === text.charCodeAt(from + j)) j++;
  return j;
}

function ownerLink(node: TreeNode, tenant: Tenant): Link | undefined {
  const link = node.link;
  return link === undefined || link.tenant === tenant ? link : node.more?.get(tenant);
}

function addOwner(node: TreeNode, link: Link): void {
  if (node.link === undefined) node.link = link;
  else (node.more ??= new Map()).set(link.tenant, link);
}

/** Removes an owner; if it was the inline one, another (if any) moves inline. */
function removeOwner(node: TreeNode, link: Link): void {
  const more = node.more;
  if (node.link === link) {
    node.link = undefined;
    if (more === undefined) return;
    for (const next of more.values()) {
      node.link = next;
      break;
    }
    more.delete((node.link as Link).tenant);
  } else {
    more?.delete(link.tenant);
  }
  if (more?.size === 0) node.more = undefined;
}

/** A node's owner links (allocates: for splits and checks, not for the match path). */
function owners(node: TreeNode): Link[] {
  const all: Link[] = node.link === undefined ? [] : [node.link];
  if (node.more !== undefined) for (const link of node.more.values()) all.push(link);
  return all;
}

function touch(node: TreeNode, tenant: Tenant): void {
  let link = ownerLink(node, tenant);
  if (link === undefined) {
    link = new Link(node, tenant);
    addOwner(node, link);
    tenant.chars += node.size;
  } else {
    if (tenant.tail === link) return;
    unlink(link);
  }
  link.prev = tenant.tail;
  if (tenant.tail !== undefined) tenant.tail.next = link;
  else tenant.head = link;
  tenant.tail = link;
}

function unlink(link: Link): void {
  const tenant = link.tenant;
  if (link.prev !== undefined) link.prev.next = link.next;
  else tenant.head = link.next;
  if (link.next !== undefined) link.next.prev = link.prev;
  else tenant.tail = link.prev;
  link.prev = undefined;
  link.next = undefined;
}

function insertAfter(at: Link, link: Link): void {
  link.prev = at;
  link.next = at.next;
  if (at.next !== undefined) at.next.prev = link;
  else at.tenant.tail = link;
  at.next = link;
}

function fail(message: string): never {
  throw new Error(`radix tree invariant broken: ${message}`);
}
