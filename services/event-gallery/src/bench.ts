// `@app/event-gallery/bench`: the internals bench/ drives below the HTTP API (seeding rows of the
// schema, the derivative renderer measured alone). Not an API: it changes with the service.
export type { GalleryDB } from "./db/schema.js";
export { DERIVATIVES_REV, renderImage } from "./derivatives/pipeline.js";
export type { EditableSettingsStore } from "./settings/store.js";
