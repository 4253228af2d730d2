// Envoy's official proto definitions, shipped by the @grpc/grpc-js-xds devDependency. Tests use
// them as the reference our hand-written proto/ must be wire-compatible with.
import type { ServiceDefinition, MethodDefinition } from '@grpc/grpc-js';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { LOADER_OPTIONS, loadProtos } from '../../src/envoy/proto-loader.js';
import type { ProcessingRequest, ProcessingResponse } from '../../src/envoy/messages.js';

const XDS_ROOT = dirname(createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json'));
export const OFFICIAL_INCLUDE_DIRS = ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) =>
  join(XDS_ROOT, 'deps', d),
);

let official: PackageDefinition | undefined;

/** Envoy's own definitions, loaded once; `files` are extra protos to load alongside ext_proc. */
export function officialPackage(files: string[] = []): PackageDefinition {
  if (files.length === 0 && official) return official;
  const def = loadSync(['envoy/service/ext_proc/v3/external_processor.proto', ...files], {
    ...LOADER_OPTIONS,
    includeDirs: OFFICIAL_INCLUDE_DIRS,
  });
  if (files.length === 0) official = def;
  return def;
}

export type ProcessMethod = MethodDefinition<ProcessingRequest, ProcessingResponse>;

/** The Process method (its serializers) from Envoy's definitions or from ours. */
export function processMethod(which: 'official' | 'ours'): ProcessMethod {
  const service =
    which === 'official'
      ? (officialPackage()['envoy.service.ext_proc.v3.ExternalProcessor'] as unknown as ServiceDefinition)
      : loadProtos().extProc;
  return service.Process as ProcessMethod;
}
