import { packageVersion } from "@app/kit/cli";

/** The product version is this package's version (src/ and dist/ both sit one level down). */
export const GALLERY_VERSION = packageVersion(import.meta.url);
