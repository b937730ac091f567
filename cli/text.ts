// Words for messages: which known name a mistyped one is nearest, and which character in an input is not what it looks
// like. Every command's did-you-mean and the config's refusals use these.

/** What kind of character a non-ASCII one is, in words that explain why it looks like ASCII but is not. */
function characterKind(c: string): string {
    if (/\p{Script=Cyrillic}/u.test(c)) return "a Cyrillic letter";
    if (/\p{Script=Greek}/u.test(c)) return "a Greek letter";
    if (/\p{Script=Armenian}/u.test(c)) return "an Armenian letter";
    if (/[\uFF01-\uFF5E]/u.test(c)) return "a full-width character";
    if (/[\u200B-\u200D\u2060\uFEFF]/u.test(c)) return "an invisible zero-width character";
    if (/\p{Zs}/u.test(c)) return "a space other than the ASCII one";
    if (/[\u2018\u2019\u201C\u201D]/u.test(c)) return "a curly quote";
    if (/\p{Pd}/u.test(c)) return "a dash other than the ASCII hyphen";
    if (/\p{L}/u.test(c)) return "a letter outside ASCII";
    if (/\p{Cc}/u.test(c)) return "a control character";
    return "a character outside ASCII";
}

/**
 * For text holding a character outside printable ASCII: which one and where, ""с" at position 3 is U+0441, a Cyrillic
 * letter, not ASCII"; undefined for plain ASCII.
 */
export function lookalikeNote(text: string): string | undefined {
    const m = /[^\x20-\x7e]/u.exec(text);
    if (!m) return undefined;
    const c = String.fromCodePoint(m[0].codePointAt(0)!);
    const shown = /\p{L}|\p{P}|\p{S}/u.test(c) ? `"${c}" ` : "";
    const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
    return `${shown}at position ${[...text.slice(0, m.index)].length + 1} is ${code}, ${characterKind(c)}, not ASCII`;
}

/** The known key within edit distance 2 of `key`, if any: catches "replica" for "replicas". */
export function closest(key: string, known: string[]): string | undefined {
    let best: { k: string; d: number } | undefined;
    for (const k of known) {
        const d = editDistance(key.toLowerCase(), k.toLowerCase());
        if (d <= 2 && (!best || d < best.d)) best = { k, d };
    }
    return best?.k;
}

/** The edit distance of two strings (for did-you-mean). */
export function editDistance(a: string, b: string): number {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
        let prev = row[0];
        row[0] = i;
        for (let j = 1; j <= b.length; j++) {
            const cur = row[j];
            row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
            prev = cur;
        }
    }
    return row[b.length];
}

/** The candidate nearest `word` (case and punctuation aside, within a third of its length), if any. */
export function nearest(word: string, candidates: string[]): string | undefined {
    const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, "");
    let best: { c: string; d: number } | undefined;
    for (const c of candidates) {
        const d = norm(c).startsWith(norm(word)) && norm(word).length >= 3 ? 0.5 : editDistance(norm(word), norm(c));
        if (d <= Math.max(2, Math.floor(norm(c).length / 3)) && (!best || d < best.d)) best = { c, d };
    }
    return best?.c;
}
