// A small line-chart writer for the ops reports: one or more panels stacked in one SVG, each with axes, round ticks,
// a legend and one <polyline data-series="<name>" data-values="x,y ..."> per series, so tests (and people) can read
// the data back.

export interface Series {
    name: string;
    /** [x, y] in data units, in x order. */
    points: [number, number][];
}

export interface Chart {
    title: string;
    xLabel: string;
    yLabel: string;
    series: Series[];
}

const WIDTH = 800;
const HEIGHT = 420;
const PLOT = { left: 60, right: 780, top: 60, bottom: 370 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

/** A count over time holds until it changes: each change becomes a vertical step. */
export function steps(points: [number, number][]): [number, number][] {
    return points.flatMap((p, i) => (i === 0 || points[i - 1][1] === p[1] ? [p] : [[p[0], points[i - 1][1]], p]));
}

/** The charts one below the other, each in a nested <svg data-panel="<title>">. */
export function lineChart(...charts: Chart[]): string {
    const height = HEIGHT * charts.length;
    return [
        `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
        `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
        ...charts.map((c, i) => panel(c, i * HEIGHT)),
        "</svg>\n",
    ].join("\n");
}

function panel(c: Chart, top: number): string {
    const all = c.series.flatMap((s) => s.points);
    const xTicks = axis(Math.max(1, ...all.map((p) => p[0])));
    const yTicks = axis(Math.max(1, ...all.map((p) => p[1])));
    const [xMax, yMax] = [xTicks[xTicks.length - 1], yTicks[yTicks.length - 1]];
    const x = (v: number) => PLOT.left + (v / xMax) * (PLOT.right - PLOT.left);
    const y = (v: number) => PLOT.bottom - (v / yMax) * (PLOT.bottom - PLOT.top);
    const f = (n: number) => n.toFixed(1);
    const out = [
        `<svg data-panel="${escape(c.title)}" x="0" y="${top}" width="${WIDTH}" height="${HEIGHT}">`,
        `<text x="${WIDTH / 2}" y="20" text-anchor="middle" font-size="15">${escape(c.title)}</text>`,
    ];
    for (const t of xTicks) {
        out.push(`<line x1="${f(x(t))}" y1="${PLOT.top}" x2="${f(x(t))}" y2="${PLOT.bottom}" stroke="#eee"/>`);
        out.push(`<text x="${f(x(t))}" y="${PLOT.bottom + 16}" text-anchor="middle">${t}</text>`);
    }
    for (const t of yTicks) {
        out.push(`<line x1="${PLOT.left}" y1="${f(y(t))}" x2="${PLOT.right}" y2="${f(y(t))}" stroke="#eee"/>`);
        out.push(`<text x="${PLOT.left - 6}" y="${f(y(t) + 4)}" text-anchor="end">${t}</text>`);
    }
    out.push(
        `<line x1="${PLOT.left}" y1="${PLOT.bottom}" x2="${PLOT.right}" y2="${PLOT.bottom}" stroke="black"/>`,
        `<line x1="${PLOT.left}" y1="${PLOT.top}" x2="${PLOT.left}" y2="${PLOT.bottom}" stroke="black"/>`,
        `<text x="${(PLOT.left + PLOT.right) / 2}" y="${HEIGHT - 12}" text-anchor="middle">${escape(c.xLabel)}</text>`,
        `<text x="16" y="${(PLOT.top + PLOT.bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(PLOT.top + PLOT.bottom) / 2})">${escape(c.yLabel)}</text>`,
    );
    c.series.forEach((s, i) => {
        const colour = COLOURS[i % COLOURS.length];
        const values = s.points.map(([a, b]) => `${a},${b}`).join(" ");
        const pixels = s.points.map(([a, b]) => `${f(x(a))},${f(y(b))}`).join(" ");
        out.push(`<polyline data-series="${escape(s.name)}" data-values="${values}" points="${pixels}" fill="none" stroke="${colour}" stroke-width="2"/>`);
        const lx = PLOT.left + 10 + i * 170;
        out.push(`<line x1="${lx}" y1="40" x2="${lx + 24}" y2="40" stroke="${colour}" stroke-width="2"/>`, `<text x="${lx + 30}" y="44">${escape(s.name)}</text>`);
    });
    out.push("</svg>");
    return out.join("\n");
}

/** About five round ticks (a step of 1, 2 or 5 times a power of ten) from 0 to at least `v`. */
function axis(v: number): number[] {
    const rough = v / 5;
    const p = 10 ** Math.floor(Math.log10(rough));
    const step = [1, 2, 5, 10].map((k) => k * p).find((n) => n >= rough)!;
    return Array.from({ length: Math.ceil(v / step - 1e-9) + 1 }, (_, i) => Number((i * step).toPrecision(6)));
}

function escape(s: string): string {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
