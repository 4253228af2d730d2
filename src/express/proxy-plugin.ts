import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'http-proxy-middleware';
import { exchangeOf } from './exchange.js';

/**
 * Wires http-proxy's events to the exchange each request belongs to. It replaces
 * http-proxy-middleware's default plugins (we eject them): their error plugin answers a plain-text
 * 502 where we retry or answer JSON, and their logger builds URLs on every response.
 */
export const exchangePlugin: Plugin<IncomingMessage, ServerResponse> = (proxyServer) => {
  proxyServer.on('proxyReq', (proxyReq, req, _res, options) => {
    exchangeOf(req)?.onProxyReq(proxyReq, options.target);
  });
  proxyServer.on('proxyRes', (proxyRes, req) => {
    exchangeOf(req)?.onProxyRes(proxyRes);
  });
  // Without an 'error' listener http-proxy's emit would throw and crash the process.
  proxyServer.on('error', (err, req, res, target) => {
    const exchange = exchangeOf(req);
    if (exchange) exchange.onError(err, target);
    else if ('writeHead' in res && !res.headersSent) res.writeHead(502).end();
  });
  // The client's socket died first; http-proxy already aborts the upstream request, and the
  // exchange's close handler releases the lease. Listening keeps the event from going unnoticed.
  proxyServer.on('econnreset', () => {});
};
