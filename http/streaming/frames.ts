import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/** A WebSocket message ready to go: the whole frame (a server's text frame, RFC 6455), and the text alone. */
export interface Frame {
  frame: Buffer;
  text: Buffer;
}

/** The frame of a text message: FIN and opcode 1, unmasked (servers do not mask), the length as RFC 6455 writes it. */
export function textFrame(text: string): Frame {
  const length = Buffer.byteLength(text);
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81;
  if (length < 126) frame[1] = length;
  else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(0, 2);
    frame.writeUInt32BE(length, 6);
  }
  frame.write(text, header);
  return { frame, text: frame.subarray(header) };
}

/**
 * WebSocket messages as whole frames, made once per turn for each (payload, stream, event): an event going to many
 * sockets with the same view (payloads share strings) is encoded once, not once per socket, and each socket is then
 * one write of those bytes.
 */
export class EventFrames {
  /** By payload, then stream, then event; looked up once per socket, so with strings already made (no key built). */
  private byPayload = new Map<string, Map<string, Map<string, Frame>>>();
  private clearing = false;

  of(stream: string[], event: string, payload: string | undefined): Frame {
    if (payload === undefined) return textFrame(JSON.stringify({ stream, event }));
    let byStream = this.byPayload.get(payload);
    if (!byStream) {
      this.byPayload.set(payload, (byStream = new Map()));
      if (!this.clearing) {
        this.clearing = true;
        setImmediate(() => {
          this.byPayload = new Map();
          this.clearing = false;
        });
      }
    }
    const streamKey = stream.length === 1 ? stream[0]! : stream.join('\u0000');
    let byEvent = byStream.get(streamKey);
    if (!byEvent) byStream.set(streamKey, (byEvent = new Map()));
    let frame = byEvent.get(event);
    if (!frame) byEvent.set(event, (frame = textFrame(JSON.stringify({ stream, event, payload }))));
    return frame;
  }
}

/**
 * How a socket is written to. Without compression (this server does not offer permessage-deflate) ws writes each
 * frame to the TCP socket at once, never queueing, so a frame made beforehand can be written there directly: one
 * write of shared bytes, where ws.send would make a header and write two buffers. Anything else goes through ws.
 */
export function writerOf(socket: WebSocket): (frame: Frame) => void {
  const raw = (socket as unknown as { _socket?: Duplex | null })._socket;
  const sender = (socket as unknown as { _sender?: { _queue?: unknown[]; _state?: number } })._sender;
  if (!raw || socket.extensions !== '' || !Array.isArray(sender?._queue)) return (f) => socket.send(f.text, { binary: false });
  return (f) => {
    if (sender._queue!.length > 0 || sender._state !== 0) socket.send(f.text, { binary: false });
    else raw.write(f.frame);
  };
}
