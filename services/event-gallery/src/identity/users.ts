import type { Role } from "../db/schema.js";

/** What clients see of a user (contract `user`). */
export interface UserView {
  id: string;
  display_name: string;
  role: Role;
  is_banned: boolean;
}

export const userView = (u: {
  id: string;
  display_name: string;
  role: Role;
  is_banned: number;
}): UserView => ({
  id: u.id,
  display_name: u.display_name,
  role: u.role,
  is_banned: u.is_banned === 1,
});

export const USER_VIEW_COLUMNS = ["id", "display_name", "role", "is_banned"] as const;
