// What the in-process fakes (tests/fakeAwsApi.ts, fakeKubeApi.ts, fakeNotifyApi.ts) share: an HTTP server on a free
// loopback port, and an answer too big for any real one.
import * as http from "http";
import type { AddressInfo } from "net";

export abstract class LoopbackServer {
    /** `http://127.0.0.1:<port>` once started. */
    url = "";
    private readonly server = http.createServer((req, res) => this.handle(req, res));

    protected abstract handle(req: http.IncomingMessage, res: http.ServerResponse): void;

    /** Between start() and stop(). */
    get listening(): boolean {
        return this.server.listening;
    }

    async start(): Promise<this> {
        await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
        this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
        return this;
    }

    async stop(): Promise<void> {
        this.server.closeAllConnections();
        await new Promise((resolve) => this.server.close(resolve));
    }
}

/** A 200 whose body is `bytes` of spaces, written as fast as the client reads it (a client must refuse it unread). */
export function hugeAnswer(res: http.ServerResponse, contentType: string, bytes: number): void {
    res.writeHead(200, { "Content-Type": contentType });
    const chunk = Buffer.alloc(65_536, " ");
    let left = bytes;
    const more = () => {
        while (left > 0 && !res.destroyed) {
            left -= chunk.length;
            if (!res.write(chunk)) return void res.once("drain", more);
        }
        res.end();
    };
    more();
}

/** An API server that answers every request with the head and half the body of a `kind` list, then drops the connection. */
export class CutMidAnswer extends LoopbackServer {
    private readonly kind: string;

    constructor(kind: string) {
        super();
        this.kind = kind;
    }

    protected handle(_req: http.IncomingMessage, res: http.ServerResponse): void {
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "1000" });
        res.write(`{"kind":"${this.kind}","items":[`);
        setTimeout(() => res.destroy(), 20);
    }
}
