import type { IncomingMessage } from 'node:http';
import type { PathRewriteFunction, PathRewriteRules } from './options.js';

export type PathRewriter = (path: string, req: IncomingMessage) => string;

/**
 * Compiles the `pathRewrite` option once. Rules behave like http-proxy-middleware's: the first
 * matching regular expression is replaced and the rest are skipped. We apply the rewrite ourselves
 * (not through http-proxy-middleware) because a retry would otherwise rewrite an already rewritten path.
 */
export function createPathRewriter(option: PathRewriteRules | PathRewriteFunction | undefined): PathRewriter {
  if (option === undefined) return (path) => path;
  if (typeof option === 'function') return (path, req) => option(path, req) ?? path;
  const rules = Object.entries(option).map(([pattern, replacement]) => ({
    regex: new RegExp(pattern),
    replacement,
  }));
  return (path) => {
    for (const rule of rules) {
      if (rule.regex.test(path)) return path.replace(rule.regex, rule.replacement);
    }
    return path;
  };
}
