/** A dependency-free grouped bar chart as SVG, for benchmark results the README shows. */
export interface BarGroup {
  label: string;
  values: number[];
}

export interface BarChartOptions {
  title: string;
  series: string[];
  unit: string;
  /** Log-scale y axis (TTFT spans orders of magnitude between policies). */
  log?: boolean;
}

const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f'];

const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function barChart(groups: BarGroup[], o: BarChartOptions): string {
  const width = Math.max(640, 110 * groups.length + 120);
  const height = 420;
  const left = 70;
  const top = 50;
  const bottom = 110;
  const plotH = height - top - bottom;
  const plotW = width - left - 20;
  const all = groups.flatMap((g) => g.values).filter((v) => Number.isFinite(v) && v > 0);
  const max = Math.max(...all, 1);
  const min = o.log ? Math.max(1, Math.min(...all) / 2) : 0;
  const y = (v: number): number => {
    if (!(v > 0)) return top + plotH;
    const f = o.log
      ? (Math.log10(v) - Math.log10(min)) / (Math.log10(max * 1.2) - Math.log10(min))
      : v / (max * 1.1);
    return top + plotH - Math.max(0, Math.min(1, f)) * plotH;
  };
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15">${escape(o.title)}</text>`,
  );
  const ticks = o.log
    ? Array.from({ length: 8 }, (_, i) => 10 ** i).filter((t) => t >= min && t <= max * 1.2)
    : Array.from({ length: 6 }, (_, i) => (max * 1.1 * i) / 5);
  for (const t of ticks) {
    out.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${y(t)}" y2="${y(t)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(t) + 4}" text-anchor="end">${t >= 1000 ? `${t / 1000}k` : t.toFixed(0)}</text>`,
    );
  }
  out.push(
    `<text x="16" y="${top + plotH / 2}" transform="rotate(-90 16 ${top + plotH / 2})" text-anchor="middle">${escape(o.unit)}</text>`,
  );
  const groupW = plotW / groups.length;
  const barW = Math.min(24, (groupW - 16) / o.series.length);
  groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + (groupW - barW * o.series.length) / 2;
    g.values.forEach((v, si) => {
      const x = x0 + si * barW;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(top + plotH - y(v)).toFixed(1)}" fill="${COLORS[si % COLORS.length]}"><title>${escape(`${g.label} ${o.series[si]}: ${v.toFixed(0)} ${o.unit}`)}</title></rect>`,
      );
    });
    const cx = left + gi * groupW + groupW / 2;
    out.push(
      `<text x="${cx}" y="${top + plotH + 14}" text-anchor="end" transform="rotate(-35 ${cx} ${top + plotH + 14})">${escape(g.label)}</text>`,
    );
  });
  o.series.forEach((s, si) => {
    const x = left + si * 90;
    out.push(
      `<rect x="${x}" y="${height - 22}" width="12" height="12" fill="${COLORS[si % COLORS.length]}"/>`,
      `<text x="${x + 16}" y="${height - 12}">${escape(s)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
