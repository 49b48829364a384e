import { describe, expect, it } from '@jest/globals';
import { LockKeyError, WithLock } from '@redlock-nest/nestjs';
import { compileMethodKey, compileRouteKey } from '../../packages/nestjs/src/keys/lock-key.js';
import { readParameters } from '../../packages/nestjs/src/keys/parameter-names.js';

class Sample {
  async byId(id: string, _dto?: unknown) {
    return id;
  }
  async withDefaults(a = '(,)', { x }: { x: number } = { x: 1 }, ...rest: unknown[]) {
    return [a, x, rest];
  }
}

const noContext = undefined as never;

describe('parameter names', () => {
  it('reads names, destructured positions and rest parameters from the source', () => {
    expect(readParameters(Sample.prototype.byId)).toEqual({ names: ['id', '_dto'], rest: false });
    expect(readParameters(Sample.prototype.withDefaults)).toEqual({ names: ['a', undefined, 'rest'], rest: true });
    expect(readParameters((order: unknown) => order).names).toEqual(['order']);
    expect(
      readParameters(function named(/* a, b */ c: unknown) {
        return c;
      }).names,
    ).toEqual(['c']);
  });
});

describe('method key templates', () => {
  const where = 'Sample.byId';
  it('resolves <name>, <name.path>, <position> and <position.path>', () => {
    const fn = Sample.prototype.byId;
    expect(compileMethodKey('order:<id>', fn, where)(['42'])).toEqual(['order:42']);
    expect(compileMethodKey('cart:<_dto.cart.id>', fn, where)(['1', { cart: { id: 7 } }])).toEqual(['cart:7']);
    expect(compileMethodKey('job:<0>', fn, where)(['a'])).toEqual(['job:a']);
    expect(compileMethodKey('x:<1.id>-<0>', fn, where)(['a', { id: 'b' }])).toEqual(['x:b-a']);
    expect(compileMethodKey('constant', fn, where)([])).toEqual(['constant']);
  });

  it('locks several keys from an array of templates or a function', () => {
    const fn = Sample.prototype.byId;
    expect(compileMethodKey(['a:<id>', 'b:<id>'], fn, where)(['1'])).toEqual(['a:1', 'b:1']);
    expect(compileMethodKey((id: string) => [`a:${id}`, `c:${id}`], fn, where)(['2'])).toEqual(['a:2', 'c:2']);
  });

  it('fails at compile time naming the method and the missing parameter', () => {
    const err = (() => {
      try {
        compileMethodKey('order:<orderId>', Sample.prototype.byId, where);
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(LockKeyError);
    expect(err!.message).toContain('Sample.byId');
    expect(err!.message).toContain('"orderId"');
    expect(err!.message).toContain('<id>');
    expect(() => compileMethodKey('x:<5>', Sample.prototype.byId, where)).toThrow(/position 5/);
    expect(() => compileMethodKey('x:<5>', Sample.prototype.withDefaults, where)).not.toThrow();
    expect(() => compileMethodKey('x:<a b>', Sample.prototype.byId, where)).toThrow(LockKeyError);
    expect(() => compileMethodKey('x:<id', Sample.prototype.byId, where)).toThrow(/unmatched/);
    expect(() => compileMethodKey([], Sample.prototype.byId, where)).toThrow(LockKeyError);
  });

  it.each([[undefined], [null], [''], [{}], [Number.NaN]])('refuses to lock order:%p at call time', (value) => {
    const resolve = compileMethodKey('order:<id>', Sample.prototype.byId, where);
    expect(() => resolve([value])).toThrow(LockKeyError);
    expect(() => resolve([value])).toThrow(/Sample\.byId.*<id>/);
  });

  it('refuses empty keys from a key function', () => {
    expect(() => compileMethodKey(() => '', Sample.prototype.byId, where)([])).toThrow(LockKeyError);
    expect(() => compileMethodKey(() => [], Sample.prototype.byId, where)([])).toThrow(LockKeyError);
  });

  it('@WithLock rejects a template naming a missing parameter when the class is defined', () => {
    expect(() => {
      class Broken {
        @WithLock('order:<orderId>')
        async pay(id: string) {
          return id;
        }
      }
      return Broken;
    }).toThrow(/Broken\.pay.*"orderId"/);
    expect(() => {
      class BadOptions {
        @WithLock('x', { wait: -1 })
        async run() {}
      }
      return BadOptions;
    }).toThrow(/wait \(false or a deadline in ms\) must be at least 0, got -1/);
  });
});

describe('route key templates', () => {
  const req = {
    params: { id: 'p1' },
    query: { id: 'q1', page: '2' },
    body: { id: 'b1', cart: { id: 'c1' }, only: 'body' },
    headers: { 'x-tenant': 't1' },
    user: { id: 'u1' },
  };
  it('looks up <id> in params, then query, then body', () => {
    expect(compileRouteKey('o:<id>', 'r')(req, noContext)).toEqual(['o:p1']);
    expect(compileRouteKey('o:<page>', 'r')(req, noContext)).toEqual(['o:2']);
    expect(compileRouteKey('o:<only>', 'r')(req, noContext)).toEqual(['o:body']);
    expect(compileRouteKey('o:<cart.id>', 'r')(req, noContext)).toEqual(['o:c1']);
  });
  it('reads params, query, body, headers (case-insensitive) and user explicitly', () => {
    const key = compileRouteKey('<params.id>/<query.id>/<body.id>/<headers.X-Tenant>/<user.id>', 'r');
    expect(key(req, noContext)).toEqual(['p1/q1/b1/t1/u1']);
  });
  it('refuses a value missing from the request', () => {
    expect(() => compileRouteKey('o:<missing>', 'r')(req, noContext)).toThrow(LockKeyError);
    expect(() => compileRouteKey('o:<user.name>', 'r')(req, noContext)).toThrow(LockKeyError);
  });
});
