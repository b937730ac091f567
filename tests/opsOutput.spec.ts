import { expect } from "chai";
import { integerFlag } from "../cli/args.ts";
import { colourEnabled, colourStatuses, plainText, progress, setProgressSink } from "../cli/output.ts";
import { toCsv } from "../cli/csv.ts";
import { lineChart, steps } from "../cli/svg.ts";
import { readSeries } from "./opsHelpers.ts";

describe("ops output and flags", () => {
    it("writes CSV that spreadsheets read: quotes commas, quotes and line breaks; blanks for missing values", () => {
        expect(toCsv(["pod", "note"], [["a", 'said "hi", twice'], ["b", undefined]])).to.equal('pod,note\r\na,"said ""hi"", twice"\r\nb,\r\n');
    });

    it("draws counts as steps, one panel per chart, with the data readable back and names escaped", () => {
        expect(steps([[0, 1], [5, 1], [9, 3]])).to.deep.equal([[0, 1], [5, 1], [9, 1], [9, 3]]);
        const svg = lineChart(
            { title: "up <fast>", xLabel: "s", yLabel: "n", series: [{ name: "a & b", points: [[0, 0], [10, 4]] }] },
            { title: "down", xLabel: "s", yLabel: "n", series: [{ name: "c", points: [[0, 4], [2000, 0]] }] },
        );
        expect(svg).to.match(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="800" height="840"/);
        const series = readSeries(svg);
        expect(series.map((s) => [s.panel, s.name, s.values])).to.deep.equal([
            ["up <fast>", "a & b", [[0, 0], [10, 4]]],
            ["down", "c", [[0, 4], [2000, 0]]],
        ]);
        // Axes end on round numbers: 10 s of 0 to 4 spans the whole plot; 2000 s likewise.
        expect(series[0].pixels).to.deep.equal([[60, 370], [780, 60]]);
        expect(series[1].pixels).to.deep.equal([[60, 60], [780, 370]]);
    });

    it("colours only where Node would: FORCE_COLOR first (1, 2, 3, true or empty on; anything else off), then NO_COLOR, NODE_DISABLE_COLORS, TERM=dumb, then a terminal", () => {
        const tty = { isTTY: true };
        const pipe = { isTTY: false };
        expect(colourEnabled(tty, {})).to.equal(true);
        expect(colourEnabled(pipe, {})).to.equal(false);
        expect(colourEnabled(tty, { NO_COLOR: "1" })).to.equal(false);
        expect(colourEnabled(tty, { NO_COLOR: "" })).to.equal(false);
        expect(colourEnabled(tty, { NODE_DISABLE_COLORS: "1" })).to.equal(false);
        expect(colourEnabled(tty, { TERM: "dumb" })).to.equal(false);
        for (const on of ["", "1", "2", "3", "true"]) expect(colourEnabled(pipe, { FORCE_COLOR: on, NO_COLOR: "1" }), on).to.equal(true);
        for (const off of ["0", "false", "yes"]) expect(colourEnabled(tty, { FORCE_COLOR: off }), off).to.equal(false);
    });

    it("colours the status word that starts a line, and nothing else; the plain text comes back whole", () => {
        const report = ["Preflight of stack staging: OK so far", "OK    ami  ami-1 is OK", "WARN  subnets  x", "FAIL  aws-names  WARN inside", "NOT RUN  stable-nodes  y", "  FAIL  Deployment a/b: z", "FAILED: 1 problem", "Result: OK", "Could not check: x"].join("\n");
        const coloured = colourStatuses(report);
        expect(coloured.split("\n")).to.deep.equal([
            "Preflight of stack staging: OK so far",
            "\u001b[32mOK\u001b[39m    ami  ami-1 is OK",
            "\u001b[33mWARN\u001b[39m  subnets  x",
            "\u001b[31mFAIL\u001b[39m  aws-names  WARN inside",
            "\u001b[35mNOT RUN\u001b[39m  stable-nodes  y",
            "  \u001b[31mFAIL\u001b[39m  Deployment a/b: z",
            "\u001b[31mFAILED\u001b[39m: 1 problem",
            "\u001b[32mResult: OK\u001b[39m",
            "\u001b[35mCould not check\u001b[39m: x",
        ]);
        expect(plainText(coloured)).to.equal(report);
    });

    it("sends progress lines where runMain points them, and nowhere by default (in-process, as the tests call commands)", () => {
        const lines: string[] = [];
        progress("unheard");
        const before = setProgressSink((l) => lines.push(l));
        progress("heard");
        setProgressSink(before);
        progress("unheard again");
        expect(lines).to.deep.equal(["heard"]);
    });

    it("says when a number flag is not a whole number in range", () => {
        expect(integerFlag("pods", "1e3", 1, 1000)).to.equal('--pods must be an integer from 1 to 1000 (got "1e3")');
        expect(integerFlag("pods", "60", 1, 1000)).to.equal(60);
    });
});
