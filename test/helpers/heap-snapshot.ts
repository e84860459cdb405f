import { setImmediate as nextTask } from 'node:timers/promises';
import { getHeapSnapshot } from 'node:v8';

interface Snapshot {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: readonly string[];
      readonly node_types: readonly [readonly string[], ...unknown[]];
      readonly edge_fields: readonly string[];
      readonly edge_types: readonly [readonly string[], ...unknown[]];
    };
  };
  readonly nodes: readonly number[];
  readonly edges: readonly number[];
  readonly strings: readonly string[];
}

/**
 * The strings of this process's heap that a sliced string holds as its parent (V8 cuts a substring of 13 characters
 * or more as a view into the string it was cut from, which it keeps alive whole), for each parent that `matches`
 * (its text, cut to V8's first 1,024 characters): its first 80 characters and how many views hold it. The snapshot
 * collects garbage first, in a task of its own.
 */
export async function slicedParents(
  matches: (text: string) => boolean,
): Promise<{ readonly text: string; readonly views: number }[]> {
  // A WeakRef's target stays alive until the task that made it ends (AbortSignal.any makes some): not garbage yet.
  await nextTask();
  let json = '';
  for await (const chunk of getHeapSnapshot()) json += String(chunk);
  const heap = JSON.parse(json) as Snapshot;
  const { node_fields, node_types, edge_fields, edge_types } = heap.snapshot.meta;
  const nodeWidth = node_fields.length;
  const edgeWidth = edge_fields.length;
  const at = (fields: readonly string[], name: string): number => {
    const index = fields.indexOf(name);
    if (index < 0) throw new Error(`heap snapshot: no ${name} field`);
    return index;
  };
  const typeField = at(node_fields, 'type');
  const nameField = at(node_fields, 'name');
  const edgeCountField = at(node_fields, 'edge_count');
  const edgeTypeField = at(edge_fields, 'type');
  const edgeNameField = at(edge_fields, 'name_or_index');
  const toNodeField = at(edge_fields, 'to_node');
  const slicedType = node_types[0].indexOf('sliced string');
  const stringType = node_types[0].indexOf('string');
  const internalEdge = edge_types[0].indexOf('internal');
  const held = new Map<number, number>();
  let edge = 0;
  for (let node = 0; node < heap.nodes.length; node += nodeWidth) {
    const edges = heap.nodes[node + edgeCountField]!;
    if (heap.nodes[node + typeField] === slicedType) {
      for (let e = edge; e < edge + edges * edgeWidth; e += edgeWidth) {
        if (heap.edges[e + edgeTypeField] !== internalEdge) continue;
        if (heap.strings[heap.edges[e + edgeNameField]!] !== 'parent') continue;
        const parent = heap.edges[e + toNodeField]!;
        if (heap.nodes[parent + typeField] !== stringType) continue;
        if (!matches(heap.strings[heap.nodes[parent + nameField]!]!)) continue;
        held.set(parent, (held.get(parent) ?? 0) + 1);
      }
    }
    edge += edges * edgeWidth;
  }
  return [...held].map(([parent, views]) => ({
    text: heap.strings[heap.nodes[parent + nameField]!]!.slice(0, 80),
    views,
  }));
}

/**
 * The sizes of the ArrayBuffers' contents of this process's heap of at least `minBytes` bytes (a view of a buffer
 * keeps its whole ArrayBuffer alive), largest first. The snapshot collects garbage first, in a task of its own.
 */
export async function largeArrayBuffers(minBytes: number): Promise<number[]> {
  await nextTask();
  let json = '';
  for await (const chunk of getHeapSnapshot()) json += String(chunk);
  const heap = JSON.parse(json) as Snapshot;
  const { node_fields } = heap.snapshot.meta;
  const nodeWidth = node_fields.length;
  const nameField = node_fields.indexOf('name');
  const sizeField = node_fields.indexOf('self_size');
  if (nameField < 0 || sizeField < 0) throw new Error('heap snapshot: no name or self_size field');
  const sizes: number[] = [];
  for (let node = 0; node < heap.nodes.length; node += nodeWidth) {
    const size = heap.nodes[node + sizeField]!;
    if (size >= minBytes && heap.strings[heap.nodes[node + nameField]!] === 'system / JSArrayBufferData') {
      sizes.push(size);
    }
  }
  return sizes.sort((a, b) => b - a);
}
