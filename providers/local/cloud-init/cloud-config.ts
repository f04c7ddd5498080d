import { parse } from 'yaml';

/** The subset of cloud-init's #cloud-config that Cluster API's kubeadm bootstrap emits. */
export interface WriteFile {
  path: string;
  content?: string;
  encoding?: string;
  permissions?: string;
  append?: boolean;
}

export interface CloudConfig {
  write_files?: WriteFile[];
  runcmd?: (string | string[])[];
}

export function parseCloudConfig(text: string): CloudConfig {
  // CAPI prefixes '## template: jinja' before '#cloud-config'; both are comments to YAML.
  const doc = (parse(text) ?? {}) as CloudConfig;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('user-data is not a #cloud-config mapping');
  return doc;
}

export function fileContent(file: WriteFile): Buffer {
  const encoding = (file.encoding ?? '').toLowerCase();
  if (['b64', 'base64'].includes(encoding)) return Buffer.from(file.content ?? '', 'base64');
  if (encoding && encoding !== 'text/plain')
    throw new Error(
      `write_files ${file.path}: encoding '${file.encoding}' is not supported (use base64 or plain text)`,
    );
  return Buffer.from(file.content ?? '');
}

/** The shell form of a runcmd entry, for running and for reporting. */
export function commandLine(entry: string | string[]): string {
  return Array.isArray(entry) ? entry.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ') : entry;
}
