/**
 * The part of the WebAssembly JavaScript API kiln's CPU backend uses. Node has it at run time;
 * TypeScript only declares it in lib.dom, which a Node package should not pull in. Shapes follow
 * lib.dom.d.ts, so the two merge if both are present.
 */
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }
  interface Memory {
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  var Memory: {
    prototype: Memory;
    new (descriptor: MemoryDescriptor): Memory;
  };
  interface ModuleExportDescriptor {
    kind: 'function' | 'global' | 'memory' | 'table';
    name: string;
  }
  interface Module {}
  var Module: {
    prototype: Module;
    new (bytes: BufferSource): Module;
    exports(moduleObject: Module): ModuleExportDescriptor[];
  };
  type ExportValue = Function | Memory;
  type Exports = Record<string, ExportValue>;
  type ImportValue = Memory | Function | number;
  type Imports = Record<string, Record<string, ImportValue>>;
  interface Instance {
    readonly exports: Exports;
  }
  var Instance: {
    prototype: Instance;
    new (module: Module, importObject?: Imports): Instance;
  };
  function validate(bytes: BufferSource): boolean;
}
