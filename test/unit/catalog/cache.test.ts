import { CatalogCache } from '../../../lambda/catalog/cache';
import { systemClock } from '../../../lambda/scheduling/clock';

describe("the catalog's routing cache", () => {
  it("forgets only the kinds a target's list_changed names, for that target only", () => {
    const cache = new CatalogCache(systemClock);
    cache.put('notes', 'tools', [{ name: 'old', inputSchema: { type: 'object' } }]);
    cache.put('notes', 'prompts', [{ name: 'p' }]);
    cache.put('other', 'tools', [{ name: 'o', inputSchema: { type: 'object' } }]);
    cache.forget('notes', ['tools']);
    expect(cache.get('notes', 'tools')).toBeUndefined();
    expect(cache.get('notes', 'prompts')).toEqual([{ name: 'p' }]);
    expect(cache.get('other', 'tools')).toHaveLength(1);
    cache.forget('unknown', ['resources', 'resourceTemplates']); // nothing cached: nothing happens
  });
});
