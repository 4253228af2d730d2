import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

/** Our hand-written protos; `../../proto` from both src/envoy and dist/envoy. */
export const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));

export const EXT_PROC_SERVICE = 'envoy.service.ext_proc.v3.ExternalProcessor';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';

/**
 * snake_case keys keep our objects identical to Envoy's docs and JSON; `defaults: false` leaves
 * absent fields undefined, which saves building default objects for every message on the hot path.
 */
export const LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
};

export interface Protos {
  packageDefinition: PackageDefinition;
  extProc: ServiceDefinition;
  health: ServiceDefinition;
}

let cached: Protos | undefined;

/** Loads (once per process) the ext_proc and health service definitions. */
export function loadProtos(): Protos {
  if (cached) return cached;
  const packageDefinition = loadSync(
    ['envoy/service/ext_proc/v3/external_processor.proto', 'grpc/health/v1/health.proto'],
    { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] },
  );
  cached = {
    packageDefinition,
    // proto-loader's and grpc-js's definition types differ only nominally.
    extProc: packageDefinition[EXT_PROC_SERVICE] as unknown as ServiceDefinition,
    health: packageDefinition[HEALTH_SERVICE] as unknown as ServiceDefinition,
  };
  return cached;
}
