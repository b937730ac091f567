import { expect } from "chai";
import { integerFlag } from "../ops/args";
import { toCsv } from "../ops/csv";
import { lineChart, steps } from "../ops/svg";
import { readSeries } from "./opsHelpers";

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

    it("says when a number flag is not a whole number in range", () => {
        expect(integerFlag("pods", "1e3", 1, 1000)).to.equal('--pods must be an integer from 1 to 1000 (got "1e3")');
        expect(integerFlag("pods", "60", 1, 1000)).to.equal(60);
    });
});
