/**
 * A V8 CPU profile (`node --cpu-prof`) as a flame graph (SVG) and a table of where the busy time
 * goes. Idle time is left out: shares are of the time the process was working.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

interface Frame {
  name: string;
  self: number;
  total: number;
  children: Map<string, Frame>;
}

/** `functionName file:line`, the file shortened to what follows node_modules/ or the project root. */
function frameName({ functionName, url, lineNumber }: CallFrame): string {
  const file = url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/(dist|src|bench)\//, '$1/');
  const name = functionName || '(anonymous)';
  return file ? `${name} ${file}:${lineNumber + 1}` : name;
}

/** The call tree with sample counts, `(idle)` removed, identical frames under one parent merged. */
export function callTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const build = (node: ProfileNode, into: Frame) => {
    into.self += hits.get(node.id) ?? 0;
    for (const childId of node.children ?? []) {
      const child = byId.get(childId)!;
      if (child.callFrame.functionName === '(idle)') continue;
      const name = frameName(child.callFrame);
      let frame = into.children.get(name);
      if (frame === undefined) {
        frame = { name, self: 0, total: 0, children: new Map() };
        into.children.set(name, frame);
      }
      build(child, frame);
    }
  };
  const root: Frame = { name: 'all busy time', self: 0, total: 0, children: new Map() };
  build(profile.nodes[0]!, root);
  const sum = (frame: Frame): number =>
    (frame.total = frame.self + [...frame.children.values()].reduce((s, c) => s + sum(c), 0));
  sum(root);
  return root;
}

/** Self time by where the code lives: a package, a Node.js module, a file of the service, or a V8/native entry. */
export function selfByPlace(profile: CpuProfile): { name: string; share: number }[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const places = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const { functionName, url } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    busy++;
    const place = url.includes('/node_modules/')
      ? url.split('/node_modules/')[1]!.split('/')[0]!
      : url.startsWith('node:')
        ? `node:${url.slice(5).split('/')[0]}`
        : url
          ? url.replace(/^.*\/(dist|src|bench)\//, '$1/')
          : `${functionName || '(native)'}`;
    places.set(place, (places.get(place) ?? 0) + 1);
  }
  return [...places.entries()].sort((a, b) => b[1] - a[1]).map(([name, samples]) => ({ name, share: samples / busy }));
}

/** Self and inclusive shares per function (a recursive function counted once per stack). */
export function topFunctions(root: Frame, count: number) {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const walk = (frame: Frame, onStack: Set<string>) => {
    self.set(frame.name, (self.get(frame.name) ?? 0) + frame.self);
    if (!onStack.has(frame.name)) inclusive.set(frame.name, (inclusive.get(frame.name) ?? 0) + frame.total);
    const next = new Set(onStack).add(frame.name);
    for (const child of frame.children.values()) walk(child, next);
  };
  for (const child of root.children.values()) walk(child, new Set());
  const rank = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, samples]) => ({ name, share: samples / root.total }));
  return { self: rank(self), inclusive: rank(inclusive) };
}

const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** A classic flame graph: the root at the bottom, width = share of busy samples; hover for names. */
export function flameSvg(root: Frame, title: string): string {
  const width = 1200;
  const rowHeight = 16;
  // Frames under 0.2 % of the busy time are left out: too narrow to read, and they only make the graph tall.
  const shown = (frame: Frame) => frame.total >= root.total * 0.002;
  const depth = (frame: Frame): number => 1 + Math.max(0, ...[...frame.children.values()].filter(shown).map(depth));
  const rows = depth(root);
  const height = rows * rowHeight + 40;
  const rects: string[] = [];
  const place = (frame: Frame, x: number, level: number, scale: number) => {
    const w = frame.total * scale;
    if (!shown(frame)) return;
    const y = height - 10 - (level + 1) * rowHeight;
    const share = ((frame.total / root.total) * 100).toFixed(1);
    const hue = frame.name.includes('node_modules') || /^[\w@-]+\//.test(frame.name.split(' ')[1] ?? '') ? 30 : 10;
    const light = 55 + ((frame.name.length * 7) % 25);
    const label = w > 40 ? esc(frame.name).slice(0, Math.floor(w / 6.5)) : '';
    rects.push(
      `<g><title>${esc(frame.name)} (${share}%)</title><rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${rowHeight - 1}" fill="hsl(${hue},80%,${light}%)"/>` +
        (label ? `<text x="${(x + 3).toFixed(1)}" y="${y + 12}">${label}</text>` : '') +
        '</g>',
    );
    let childX = x;
    for (const child of [...frame.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      place(child, childX, level + 1, scale);
      childX += child.total * scale;
    }
  };
  place(root, 0, 0, width / root.total);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
<text x="6" y="16" font-family="sans-serif" font-size="14" font-weight="bold">${esc(title)}</text>
${rects.join('\n')}
</svg>
`;
}
