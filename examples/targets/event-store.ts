import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * An in-memory event store for one session's transport (the v1 SDK's `EventStore`): what makes its
 * streams resumable (priming events, event ids, replay after `Last-Event-ID`). Ids are per store and
 * increasing; a replay sends the events of the id's stream after it, in order.
 */
export class MemoryEventStore implements EventStore {
  private readonly events: Array<{ id: string; streamId: string; message: JSONRPCMessage }> = [];

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${this.events.length + 1}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((event) => event.id === eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const index = this.events.findIndex((event) => event.id === lastEventId);
    if (index < 0) return '';
    const { streamId } = this.events[index]!;
    for (const event of this.events.slice(index + 1)) {
      // The priming event is stored as an empty message: nothing to replay.
      if (event.streamId === streamId && Object.keys(event.message).length > 0) await send(event.id, event.message);
    }
    return streamId;
  }
}
